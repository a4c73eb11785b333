// The official Anthropic client pointed at the oscar-server the CTest driver
// started (OSCAR_URL), and a raw POST that shows status and body as sent.
import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { BASE, API_KEY } from './common.mjs';

export function anthropic() {
  return new Anthropic({ baseURL: BASE, apiKey: API_KEY, maxRetries: 0, timeout: 60_000 });
}

export async function postAnthropic(path, body) {
  const r = await fetch(BASE + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text };
}

// A 400 in Anthropic's error shape whose message mentions `needle`.
export function assertAnthropicError(r, needle) {
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json?.type, 'error', r.text);
  assert.equal(r.json.error.type, 'invalid_request_error', r.text);
  assert.match(r.json.error.message, needle, r.text);
}

// The raw event stream of a request: [{event, data}] in order.
export async function rawEvents(body) {
  const r = await fetch(BASE + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const events = [];
  for (const block of (await r.text()).split('\n\n')) {
    if (!block.trim()) continue;
    const lines = block.split('\n');
    const ev = lines.find((l) => l.startsWith('event: '))?.slice(7);
    const data = lines.find((l) => l.startsWith('data: '))?.slice(6);
    events.push({ event: ev, data: JSON.parse(data) });
  }
  return events;
}

// Checks the order Anthropic documents: message_start, then per block a
// start, deltas and a stop with the same index (0, 1, ...), then one
// message_delta and message_stop; the event name equals each data's type.
export function assertEventGrammar(events) {
  for (const e of events) assert.equal(e.event, e.data.type, JSON.stringify(e));
  const types = events.map((e) => e.event).filter((t) => t !== 'ping');
  assert.equal(types[0], 'message_start');
  assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
  assert.equal(events[1]?.event, 'ping', 'a ping follows message_start');
  let open = -1, next = 0;
  for (const e of events.slice(1, -2)) {
    const d = e.data;
    if (d.type === 'content_block_start') {
      assert.equal(open, -1, 'a block starts while another is open');
      assert.equal(d.index, next++);
      open = d.index;
    } else if (d.type === 'content_block_delta') {
      assert.equal(d.index, open);
    } else if (d.type === 'content_block_stop') {
      assert.equal(d.index, open);
      open = -1;
    } else if (d.type !== 'ping') {
      assert.fail('unexpected event ' + d.type);
    }
  }
  assert.equal(open, -1, 'a block was never stopped');
  return next;
}
