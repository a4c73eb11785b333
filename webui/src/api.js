// The page's view of oscar-server: JSON endpoints with the API key (when the
// user gave one) as a Bearer token, and the streaming chat request.
import { readSse } from './sse.js';
import { applyEventData, emptyReply } from './chat_stream.js';

export class AuthError extends Error {
  constructor(message) {
    super(message || 'the server wants an API key');
    this.name = 'AuthError';
  }
}

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
  }
}

async function errorFrom(res) {
  let msg = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body?.error?.message) msg = body.error.message;
  } catch {
    /* not JSON: keep the status line */
  }
  return res.status === 401 ? new AuthError(msg) : new HttpError(res.status, msg);
}

export class Api {
  // getKey: () => the API key or '' (read on every request, so a key typed
  // after a 401 applies at once).
  constructor(getKey, base = '') {
    this.getKey = getKey;
    this.base = base;
  }

  headers(extra = {}) {
    const key = this.getKey();
    return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
  }

  async getJson(path) {
    const res = await fetch(this.base + path, { headers: this.headers() });
    if (!res.ok) throw await errorFrom(res);
    return res.json();
  }

  props() {
    return this.getJson('/props');
  }

  // [] when the server runs with --no-slots.
  async slots() {
    try {
      return await this.getJson('/slots');
    } catch (e) {
      if (e instanceof HttpError && e.status === 501) return [];
      throw e;
    }
  }

  // The queue and throughput gauges of /metrics; null without --metrics.
  async metrics() {
    const res = await fetch(this.base + '/metrics', { headers: this.headers() });
    if (res.status === 501 || res.status === 404) return null;
    if (!res.ok) throw await errorFrom(res);
    return parseMetrics(await res.text());
  }

  // Streams a chat completion; onUpdate(reply) after every event. Resolves
  // with the finished reply; an abort resolves with what arrived so far and
  // reply.aborted set.
  async streamChat(messages, params, signal, onUpdate) {
    const res = await fetch(this.base + '/v1/chat/completions', {
      method: 'POST',
      headers: this.headers({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ ...params, messages, stream: true, stream_options: { include_usage: true } }),
      signal,
    });
    if (!res.ok) throw await errorFrom(res);
    const reply = emptyReply();
    try {
      await readSse(res.body, (ev) => {
        applyEventData(reply, ev.data);
        onUpdate(reply);
      });
    } catch (e) {
      if (e.name !== 'AbortError') throw e;
      reply.aborted = true;
    }
    return reply;
  }
}

// Prometheus text -> { name: value } for the llamacpp: gauges the page shows.
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^llamacpp:([a-z_]+)\s+([-+0-9.eE]+|NaN)\s*$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}
