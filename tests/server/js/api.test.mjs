// The OpenAI API surface of oscar-server through the official client, on
// any model: shapes, usage numbers, streaming, determinism under
// concurrency, cancellation, bad input, and the auxiliary endpoints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { client, post, get, waitIdle, BASE, SLOT_CTX, N_SLOTS } from './common.mjs';

const oa = client();
const greedy = { temperature: 0 };

test('models list names the served model', async () => {
  const list = await oa.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(typeof list.data[0].id, 'string');
  assert.equal(list.data[0].object, 'model');
});

test('chat completion: shape, usage and finish_reason length', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const r = await oa.chat.completions.create({ model: 'x', messages, max_tokens: 6, ignore_eos: true, ...greedy });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 6);
  // prompt_tokens = the rendered template, tokenized (checked through the server's own endpoints).
  const tmpl = await post('/apply-template', { messages });
  assert.equal(tmpl.status, 200);
  const toks = await post('/tokenize', { content: tmpl.json.prompt, add_special: false });
  assert.equal(r.usage.prompt_tokens, toks.json.tokens.length);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 6);
});

test('max_completion_tokens is honoured', async () => {
  const r = await oa.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 3, ignore_eos: true, ...greedy,
  });
  assert.equal(r.usage.completion_tokens, 3);
});

test('chat stream: deltas add up to the non-streamed answer; usage chunk', async () => {
  const req = { model: 'x', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, ...greedy };
  const whole = await oa.chat.completions.create(req);
  const stream = await oa.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const c of stream) {
    chunks++;
    assert.equal(c.object, 'chat.completion.chunk');
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      if (ch.delta?.content) text += ch.delta.content;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  assert.ok(chunks >= 2);
  assert.equal(text, whole.choices[0].message.content ?? '');
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(
    [usage.prompt_tokens, usage.completion_tokens],
    [whole.usage.prompt_tokens, whole.usage.completion_tokens]);
});

test('completions (OpenAI) stream and non-stream agree', async () => {
  const req = { model: 'x', prompt: 'The cat', max_tokens: 10, ...greedy };
  const whole = await oa.completions.create(req);
  assert.equal(whole.object, 'text_completion');
  let text = '';
  for await (const c of await oa.completions.create({ ...req, stream: true })) text += c.choices[0]?.text ?? '';
  assert.equal(text, whole.choices[0].text);
  assert.ok(whole.usage.prompt_tokens > 0);
});

test('seeded sampling is reproducible', async () => {
  const req = { model: 'x', prompt: 'A', max_tokens: 12, temperature: 1.0, top_k: 0, top_p: 1, min_p: 0, seed: 1234 };
  const a = await oa.completions.create(req);
  const b = await oa.completions.create(req);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test('logprobs: sampled token is the top alternative under greedy decoding', async () => {
  const r = await oa.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4, logprobs: true, top_logprobs: 3,
    ignore_eos: true, ...greedy,
  });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, 4);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].token, t.token);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4);
    const ps = t.top_logprobs.map((x) => x.logprob);
    assert.deepEqual([...ps].sort((x, y) => y - x), ps);
  }
});

test('greedy output of 8 concurrent requests equals each run alone', async () => {
  const prompts = Array.from({ length: 8 }, (_, i) => `Story number ${i}: `.repeat(1 + (i % 3)));
  const req = (p) => ({ model: 'x', prompt: p, max_tokens: 16, ignore_eos: true, ...greedy, cache_prompt: false });
  const alone = [];
  for (const p of prompts) alone.push((await oa.completions.create(req(p))).choices[0].text);
  const together = await Promise.all(prompts.map((p) => oa.completions.create(req(p))));
  assert.deepEqual(together.map((r) => r.choices[0].text), alone);
});

test('cancellation: a client that disconnects mid-stream frees its slot at once', async () => {
  const ctl = new AbortController();
  const stream = await oa.chat.completions.create(
    { model: 'x', messages: [{ role: 'user', content: 'go on forever' }], max_tokens: 100000, ignore_eos: true,
      stream: true, ...greedy },
    { signal: ctl.signal });
  let n = 0;
  try {
    for await (const c of stream) {
      if (c.choices[0]?.delta?.content !== undefined) n++;
      if (n >= 3) ctl.abort();
    }
  } catch (e) {
    assert.ok(/abort/i.test(String(e?.name) + String(e?.message)), String(e));
  }
  const t0 = Date.now();
  await waitIdle(2000);
  assert.ok(Date.now() - t0 < 2000);
  const next = await oa.completions.create({ model: 'x', prompt: 'next', max_tokens: 2, ...greedy });
  assert.equal(next.choices.length, 1);
});

test('cancellation: a non-streaming client that goes away frees its slot', async () => {
  const ctl = new AbortController();
  const p = oa.completions.create(
    { model: 'x', prompt: 'long', max_tokens: 100000, ignore_eos: true, ...greedy }, { signal: ctl.signal });
  p.catch(() => {});
  // Abort once the request is being generated.
  const end = Date.now() + 5000;
  while (Date.now() < end) {
    const s = await get('/slots');
    if (s.json.some((x) => x.is_processing && x.n_decoded > 0)) break;
  }
  ctl.abort();
  await assert.rejects(p);
  await waitIdle(2000);
});

test('native /completion: n_predict, stream, tokens', async () => {
  const r = await post('/completion', { prompt: 'Hello', n_predict: 5, temperature: 0, ignore_eos: true });
  assert.equal(r.status, 200);
  assert.equal(r.json.tokens_predicted, 5);
  assert.equal(r.json.stop, true);
  assert.equal(r.json.stop_type, 'limit');
  const s = await fetch(BASE + '/completion', {
    method: 'POST', headers: { Authorization: 'Bearer ' + (process.env.OSCAR_API_KEY || '') },
    body: JSON.stringify({ prompt: 'Hello', n_predict: 5, temperature: 0, ignore_eos: true, stream: true }),
  });
  const text = await s.text();
  const events = text.split('\n\n').filter((x) => x.startsWith('data: ')).map((x) => JSON.parse(x.slice(6)));
  assert.equal(events.at(-1).stop, true);
  assert.equal(events.map((e) => e.content).join(''), r.json.content);
});

test('tokenize / detokenize round trip', async () => {
  const t = await post('/tokenize', { content: 'hello world', with_pieces: false });
  assert.equal(t.status, 200);
  assert.ok(t.json.tokens.length > 0);
  const d = await post('/detokenize', { tokens: t.json.tokens });
  assert.equal(d.json.content.trim(), 'hello world');
});

test('props, slots, health', async () => {
  const p = await get('/props');
  assert.equal(p.json.total_slots, N_SLOTS);
  assert.equal(p.json.default_generation_settings.n_ctx, SLOT_CTX);
  const s = await get('/slots');
  assert.equal(s.json.length, N_SLOTS);
  const h = await fetch(BASE + '/health');
  assert.equal(h.status, 200);
});

// ---- bad input: each a 4xx with an OpenAI error body, and the server keeps serving ----

function assertError(r, status) {
  assert.equal(r.status, status, r.text);
  assert.equal(typeof r.json?.error?.message, 'string', r.text);
  assert.equal(r.json.error.code, status);
}

test('malformed JSON', async () => assertError(await post('/v1/chat/completions', '{"messages": [', {}), 400));
test('body that is not an object', async () => assertError(await post('/v1/completions', '[1,2]'), 400));
test('wrong types', async () => {
  assertError(await post('/v1/chat/completions', { messages: 'hi' }), 400);
  assertError(await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }), 400);
  assertError(await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: -5 }), 400);
  assertError(await post('/v1/completions', { prompt: 'x', stop: 7 }), 400);
  assertError(await post('/v1/completions', { prompt: { a: 1 } }), 400);
  assertError(await post('/v1/chat/completions', { messages: [{ role: 'wizard', content: 'x' }] }), 400);
  assertError(await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], stream: 'yes' }), 400);
});
test('empty messages', async () => assertError(await post('/v1/chat/completions', { messages: [] }), 400));
test('missing prompt', async () => assertError(await post('/v1/completions', {}), 400));
test('token ids outside the vocabulary', async () => {
  assertError(await post('/v1/completions', { prompt: [1, 2, 99999999] }), 400);
  assertError(await post('/detokenize', { tokens: [-1] }), 400);
});
test('unknown fields are ignored', async () => {
  const r = await post('/v1/chat/completions',
    { messages: [{ role: 'user', content: 'x' }], max_tokens: 1, frobnicate: { deep: [1] }, user: 'u' });
  assert.equal(r.status, 200, r.text);
});
test('prompt longer than the slot context: 400 with the numbers', async () => {
  const long = 'word '.repeat(SLOT_CTX * 2);
  const r = await post('/v1/completions', { prompt: long, max_tokens: 1 });
  assertError(r, 400);
  assert.equal(r.json.error.n_ctx, SLOT_CTX);
  assert.ok(r.json.error.n_prompt_tokens >= SLOT_CTX);
  assert.match(r.json.error.message, new RegExp(String(SLOT_CTX)));
});
test('oversized body', async () => {
  const big = JSON.stringify({ prompt: 'x'.repeat(17 << 20) });
  const r = await post('/v1/completions', big);
  assertError(r, 413);
});
test('invalid UTF-8', async () => {
  const bytes = new Uint8Array([...Buffer.from('{"prompt": "ab'), 0xff, 0xfe, ...Buffer.from('"}')]);
  assertError(await post('/v1/completions', bytes), 400);
  const bytes2 = new Uint8Array([...Buffer.from('{"messages": [{"role":"user","content":"\xc3'), ...Buffer.from('"}]}')]);
  bytes2[bytes2.indexOf(0xc3) + 1] = 0x28;
  assertError(await post('/v1/chat/completions', bytes2), 400);
});
test('unknown endpoint', async () => assertError(await get('/v1/nope'), 404));
test('n beyond the slot count is refused clearly', async () => {
  assertError(await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], n: N_SLOTS + 1 }), 400);
});
// Raw bytes on a fresh connection; resolves with whatever the server answers before closing.
function raw(bytes, { half = false } = {}) {
  const { hostname, port } = new URL(BASE);
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), hostname, () => {
      sock.write(bytes);
      if (half) setTimeout(() => sock.destroy(), 100);
    });
    let out = '';
    sock.on('data', (d) => { out += d.toString('latin1'); });
    sock.on('close', () => resolve(out));
    sock.on('error', () => resolve(out));
    sock.setTimeout(5000, () => sock.destroy());
  });
}

test('garbage instead of HTTP gets a 400 or a closed connection, never a hang', async () => {
  const a = await raw('GARBAGE\r\n\r\n');
  assert.ok(a === '' || /^HTTP\/1\.1 4\d\d/.test(a), a);
  const b = await raw('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n{}');
  assert.ok(b === '' || /^HTTP\/1\.1 4\d\d/.test(b), b);
});

test('a client that sends half a body and leaves does not hold a slot', async () => {
  await raw('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"prompt": "abc', { half: true });
  await waitIdle(2000);
});

test('after all the bad input, nothing is stuck', async () => {
  await waitIdle(2000);
  const r = await oa.completions.create({ model: 'x', prompt: 'ok', max_tokens: 2, ...greedy });
  assert.equal(r.choices.length, 1);
});
