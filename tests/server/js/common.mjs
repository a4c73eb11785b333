// Helpers shared by the oscar-server client tests. The CTest driver starts
// the server and passes its address (and what it was started with) in the
// environment.
import OpenAI from 'openai';

export const BASE = process.env.OSCAR_URL;
export const API_KEY = process.env.OSCAR_API_KEY || 'no-key';
export const SLOT_CTX = Number(process.env.OSCAR_SLOT_CTX || 0);
export const N_SLOTS = Number(process.env.OSCAR_N_SLOTS || 1);
if (!BASE) throw new Error('OSCAR_URL is not set (run through the CTest driver)');

export function client(opts = {}) {
  return new OpenAI({ baseURL: BASE + '/v1', apiKey: API_KEY, maxRetries: 0, timeout: 60_000, ...opts });
}

export async function post(path, body, headers = {}) {
  const raw = typeof body === 'string' || body instanceof Uint8Array;
  const r = await fetch(BASE + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + API_KEY, ...headers },
    body: raw ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text };
}

export async function get(path, headers = {}) {
  const r = await fetch(BASE + path, { headers: { Authorization: 'Bearer ' + API_KEY, ...headers } });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits until every slot is idle (or throws after `ms`).
export async function waitIdle(ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const s = await get('/slots');
    if (s.status === 200 && s.json.every((x) => !x.is_processing)) return s.json;
    if (Date.now() > end) throw new Error('slots still busy: ' + s.text);
    await sleep(20);
  }
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
