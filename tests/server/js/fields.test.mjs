// llama-server's request fields and HTTP details, through the official
// OpenAI client where the field is OpenAI's and raw HTTP where it is
// llama.cpp's: n choices, prompt arrays and shapes, logit_bias, n_probs,
// response_fields, progress and timings, prefill, id_slot, cache_prompt,
// truncation, the native /completions, system_fingerprint and CORS.
// The server runs a random-weight model: texts are gibberish, but greedy
// decoding is deterministic, which is what these tests lean on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { client, post, get, BASE, SLOT_CTX, N_SLOTS } from './common.mjs';

const oa = client();
const greedy = { temperature: 0 };
const user = (content) => [{ role: 'user', content }];

// Reads an SSE response body into its JSON events.
async function sse(path, body) {
  const r = await fetch(BASE + path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(r.status, 200);
  const text = await r.text();
  return text.split('\n\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));
}

function raw(method, path, headers = {}) {
  const u = new URL(BASE + path);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, headers }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function firstToken(prompt) {
  const r = await post('/completion', { prompt, n_predict: 1, n_probs: 1, ...greedy });
  assert.equal(r.status, 200, r.text);
  return r.json.completion_probabilities[0];
}

test('n: 3 chat choices, indexes 0..2, identical at temperature 0', async () => {
  const r = await oa.chat.completions.create({
    model: 'x', messages: user('Tell me'), n: 3, max_tokens: 5, ignore_eos: true, ...greedy,
  });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const texts = r.choices.map((c) => c.message.content);
  assert.ok(texts[0].length > 0);
  assert.equal(new Set(texts).size, 1);
  assert.equal(r.usage.completion_tokens, 15);
  const one = await oa.chat.completions.create({ model: 'x', messages: user('Tell me'), max_tokens: 5, ignore_eos: true, ...greedy });
  assert.equal(r.usage.prompt_tokens, one.usage.prompt_tokens);  // the shared prompt counted once
  assert.equal(texts[0], one.choices[0].message.content);
});

test('n: 2 streamed, per-choice index; each choice starts with role and content null', async () => {
  const req = { model: 'x', messages: user('Stream it'), n: 2, max_tokens: 6, ignore_eos: true, ...greedy };
  const whole = await oa.chat.completions.create(req);
  const chunks = await sse('/v1/chat/completions', req);
  const text = ['', ''];
  const firstDelta = [null, null];
  const finish = [null, null];
  for (const c of chunks)
    for (const ch of c.choices) {
      if (firstDelta[ch.index] === null) firstDelta[ch.index] = ch.delta;
      if (typeof ch.delta?.content === 'string') text[ch.index] += ch.delta.content;
      if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
    }
  for (const i of [0, 1]) {
    assert.equal(firstDelta[i].role, 'assistant');
    assert.ok('content' in firstDelta[i] && firstDelta[i].content === null, JSON.stringify(firstDelta[i]));
    assert.equal(text[i], whole.choices[i].message.content);
    assert.equal(finish[i], 'length');
  }
  // The last streamed chunk carries the timings.
  assert.equal(chunks.at(-1).timings.predicted_n, 6);
});

test('n over the slot count is a 400', async () => {
  const r = await post('/v1/chat/completions', { messages: user('x'), n: N_SLOTS + 1, max_tokens: 1 });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /slots/);
});

test('/v1/completions: an array of prompts gives one choice per prompt', async () => {
  const prompts = ['The cat', 'A dog ran'];
  const r = await oa.completions.create({ model: 'x', prompt: prompts, max_tokens: 4, ignore_eos: true, ...greedy });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  for (const i of [0, 1]) {
    const alone = await oa.completions.create({ model: 'x', prompt: prompts[i], max_tokens: 4, ignore_eos: true, ...greedy });
    assert.equal(r.choices[i].text, alone.choices[0].text);
  }
  assert.equal(r.usage.completion_tokens, 8);
});

test('/completion: token, text and JSON-object prompts in one request, one result each', async () => {
  const text = 'I believe the meaning of life is';
  const toks = (await post('/tokenize', { content: text, add_special: true })).json.tokens;
  const r = await post('/completion', { prompt: [toks, text, { prompt_string: text }], n_predict: 4, ...greedy });
  assert.equal(r.status, 200, r.text);
  assert.ok(Array.isArray(r.json));
  assert.equal(r.json.length, 3);
  assert.deepEqual(r.json.map((x) => x.index), [0, 1, 2]);
  assert.equal(r.json[0].content, r.json[1].content);
  assert.equal(r.json[0].content, r.json[2].content);
  const two = await post('/completion', { prompt: text, n: 2, n_predict: 2, seed: 7 });
  assert.deepEqual(two.json.map((x) => x.generation_settings.seed), [7, 8]);  // choice j samples with seed + j
  // One prompt of ids and text mixed: the same tokens as the parts.
  const half = (await post('/tokenize', { content: ' the meaning of life is' })).json.tokens;
  const head = (await post('/tokenize', { content: 'I believe', add_special: true })).json.tokens;
  const mixed = await post('/completion', { prompt: [...head, ' the meaning of life is'], n_predict: 4, ...greedy });
  const plain = await post('/completion', { prompt: [...head, ...half], n_predict: 4, ...greedy });
  assert.equal(mixed.status, 200, mixed.text);
  assert.equal(mixed.json.content, plain.json.content);
  assert.equal(mixed.json.tokens_evaluated, head.length + half.length);
});

test('/completion streamed with two prompts: chunks name their prompt, each ends with stop', async () => {
  const whole = await post('/completion', { prompt: ['Red', 'Blue sky'], n_predict: 3, ignore_eos: true, ...greedy });
  const chunks = await sse('/completion', { prompt: ['Red', 'Blue sky'], n_predict: 3, ignore_eos: true, ...greedy });
  for (const i of [0, 1]) {
    const mine = chunks.filter((c) => c.index === i);
    assert.equal(mine.filter((c) => c.stop).length, 1);
    assert.equal(mine.at(-1).stop, true);
    assert.equal(mine.map((c) => c.content).join(''), whole.json[i].content);
  }
});

test('JSON-object prompt with multimodal data: a clear 400', async () => {
  const r = await post('/completion', { prompt: { prompt_string: 'look <__media__>', multimodal_data: ['iVBORw0KGgo='] } });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /multimodal/);
});

test('logit_bias by token id (OpenAI object form) changes the greedy first token', async () => {
  const req = { model: 'x', messages: user('Once upon a time'), max_tokens: 1, logprobs: true, ...greedy };
  const plain = await oa.chat.completions.create(req);
  const id0 = plain.choices[0].logprobs.content[0].id;
  assert.ok(Number.isInteger(id0));
  const biased = await oa.chat.completions.create({ ...req, logit_bias: { [id0]: -100 } });
  assert.notEqual(biased.choices[0].logprobs.content[0].id, id0);
  // llama.cpp's array form with false (never produced), on the native endpoint.
  const t0 = await firstToken('Once upon a time');
  const banned = await post('/completion', { prompt: 'Once upon a time', n_predict: 1, n_probs: 1, logit_bias: [[t0.id, false]], ...greedy });
  assert.notEqual(banned.json.completion_probabilities[0].id, t0.id);
});

test('logit_bias by text bans every token of the text', async () => {
  // A prompt whose greedy first token is text that tokenizes back to it (not a partial UTF-8 piece).
  let prompt = null, t0 = null, ids = null;
  for (const p of ['Hello there', 'Once upon a time', 'The cat', 'A', 'We went', 'Numbers: 1 2 3']) {
    t0 = await firstToken(p);
    ids = (await post('/tokenize', { content: t0.token })).json.tokens;
    if (ids.includes(t0.id)) { prompt = p; break; }
  }
  assert.ok(prompt, 'no prompt with a round-tripping first token');
  for (const form of [[[t0.token, false]], { [t0.token]: -1000 }]) {
    const r = await post('/completion', { prompt, n_predict: 1, n_probs: 1, logit_bias: form, ...greedy });
    assert.equal(r.status, 200, r.text);
    assert.ok(!ids.includes(r.json.completion_probabilities[0].id), JSON.stringify(form));
  }
});

test('n_probs: bytes with every token and alternative', async () => {
  const r = await post('/completion', { prompt: 'The sky', n_predict: 3, n_probs: 4, ...greedy });
  assert.equal(r.json.completion_probabilities.length, 3);
  for (const p of r.json.completion_probabilities) {
    if (!p.token.includes('\uFFFD')) assert.deepEqual(p.bytes, [...Buffer.from(p.token, 'utf8')]);
    assert.ok(p.bytes.length > 0 && p.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
    assert.ok(p.logprob <= 0);
    assert.equal(p.top_logprobs.length, 4);
    assert.equal(p.top_logprobs[0].id, p.id);  // greedy takes the most likely
    for (const a of p.top_logprobs) assert.ok(Array.isArray(a.bytes) && 'id' in a && 'logprob' in a);
  }
});

test('post_sampling_probs: probabilities of the kept candidates', async () => {
  const r = await post('/completion', {
    prompt: 'The sky', n_predict: 3, n_probs: 5, post_sampling_probs: true, temperature: 1, top_k: 2, seed: 3,
  });
  for (const p of r.json.completion_probabilities) {
    assert.ok(p.prob > 0 && p.prob <= 1);
    assert.ok(!('logprob' in p));
    assert.ok(p.top_probs.length >= 1 && p.top_probs.length <= 2);  // top_k 2 keeps two at most
    const sum = p.top_probs.reduce((s, a) => s + a.prob, 0);
    assert.ok(Math.abs(sum - 1) < 1e-3, String(sum));
    assert.ok(p.top_probs.some((a) => a.id === p.id));
  }
});

test('response_fields: exactly the asked keys, nested paths unnested', async () => {
  const r = await post('/completion', {
    prompt: 'Hi', n_predict: 3, response_fields: ['content', 'generation_settings/n_predict', 'prompt', 'nope'],
  });
  assert.deepEqual(Object.keys(r.json).sort(), ['content', 'generation_settings/n_predict', 'prompt']);
  assert.equal(r.json['generation_settings/n_predict'], 3);
  assert.equal(typeof r.json.content, 'string');
  assert.ok(r.json.prompt.endsWith('Hi'));
});

test('return_progress: streamed prompt progress up to the whole prompt', async () => {
  const prompt = 'word '.repeat(40);
  const chunks = await sse('/completion', { prompt, n_predict: 2, return_progress: true, cache_prompt: false });
  const progress = chunks.filter((c) => c.prompt_progress).map((c) => c.prompt_progress);
  assert.ok(progress.length >= 2, JSON.stringify(progress));
  const total = chunks.at(-1).tokens_evaluated;
  for (const p of progress) assert.equal(p.total, total);
  assert.equal(progress[0].processed, progress[0].cache);  // the first report: nothing evaluated yet
  assert.equal(progress.at(-1).processed, total);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].processed >= progress[i - 1].processed);
});

test('timings: in the last streamed chunk of every API; per token on request', async () => {
  const cmpl = await sse('/v1/completions', { prompt: 'a b', max_tokens: 3, ignore_eos: true, ...greedy });
  assert.equal(cmpl.at(-1).timings.predicted_n, 3);
  const native = await sse('/completion', { prompt: 'a b', n_predict: 3, ignore_eos: true, timings_per_token: true, ...greedy });
  const tokens = native.filter((c) => !c.stop);
  assert.equal(tokens.length, 3);
  tokens.forEach((c, i) => assert.equal(c.timings.predicted_n, i + 1));
  assert.equal(native.at(-1).stop, true);
  assert.equal(native.at(-1).timings.predicted_n, 3);
});

test('chat stream with timings_per_token: none on the role chunk, then on tokens and the usage chunk', async () => {
  const chunks = await sse('/v1/chat/completions', {
    messages: user('test'), max_tokens: 5, ignore_eos: true, stream_options: { include_usage: true }, timings_per_token: true, ...greedy,
  });
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(chunks[0].choices[0].delta.content, null);
  assert.ok(!('timings' in chunks[0]));
  for (const c of chunks.slice(1)) if (c.choices.length) assert.ok(!('role' in c.choices[0].delta));
  assert.ok(chunks.slice(1, -1).some((c) => c.timings && c.timings.predicted_n >= 1));
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 5);
  assert.equal(last.timings.predicted_n, 5);
});

test('return_progress on chat: reused cache in the first report, the whole prompt in the last', async () => {
  const req = { messages: user('This is a test '.repeat(10)), max_tokens: 1, return_progress: true, id_slot: 2 };
  for (const reuse of [false, true]) {
    const chunks = await sse('/v1/chat/completions', reuse ? req : { ...req, cache_prompt: false });
    const progress = chunks.filter((c) => c.prompt_progress).map((c) => c.prompt_progress);
    assert.ok(progress.length >= 2, JSON.stringify(progress));
    assert.equal(progress[0].cache, progress[0].processed);
    assert.equal(progress[0].cache > 0, reuse);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].processed > progress[i - 1].processed);
    assert.equal(progress.at(-1).processed, progress.at(-1).total);
  }
});

test('assistant prefill continues the last message', async () => {
  const messages = [{ role: 'user', content: 'Say something' }, { role: 'assistant', content: 'Once upon' }];
  const r = await oa.chat.completions.create({ model: 'x', messages, max_tokens: 5, ignore_eos: true, ...greedy });
  // The prompt: the conversation rendered, cut right after the prefilled text (no end of turn).
  const cut = (await post('/apply-template', { messages })).json.prompt;
  assert.ok(cut.endsWith('Once upon'), cut);
  const closed = (await post('/apply-template', { messages: [...messages, { role: 'user', content: 'x' }] })).json.prompt;
  assert.ok(closed.startsWith(cut) && closed.length > cut.length + 'x'.length);  // the message was closed there
  const ids = (await post('/tokenize', { content: cut })).json.tokens;
  assert.equal(r.usage.prompt_tokens, ids.length);
  const raw = await post('/completion', { prompt: ids, n_predict: 5, ignore_eos: true, ...greedy });
  assert.equal(r.choices[0].message.content, raw.json.content);
  // The same, asked for explicitly.
  const e = await post('/v1/chat/completions',
    { messages, max_tokens: 5, ignore_eos: true, continue_final_message: true, add_generation_prompt: false, ...greedy });
  assert.equal(e.json.choices[0].message.content, raw.json.content);
  const bad = await post('/v1/chat/completions',
    { messages, max_tokens: 1, continue_final_message: true, add_generation_prompt: true });
  assert.equal(bad.status, 400);
});

test('id_slot pins a request to a slot; cache_prompt false evaluates the whole prompt', async () => {
  const prompt = 'pinned prompt '.repeat(8);
  const a = await post('/completion', { prompt, n_predict: 1, id_slot: 1, ...greedy });
  assert.equal(a.json.id_slot, 1);
  const b = await post('/completion', { prompt, n_predict: 1, id_slot: 1, ...greedy });
  assert.equal(b.json.id_slot, 1);
  assert.ok(b.json.timings.cache_n > 0, JSON.stringify(b.json.timings));
  const c = await post('/completion', { prompt, n_predict: 1, id_slot: 1, cache_prompt: false, ...greedy });
  assert.equal(c.json.timings.cache_n, 0);
  assert.equal(c.json.timings.prompt_n, c.json.tokens_evaluated);
  const other = await post('/completion', { prompt, n_predict: 1, id_slot: 0, ...greedy });
  assert.equal(other.json.id_slot, 0);
  assert.equal((await post('/completion', { prompt, id_slot: N_SLOTS })).status, 400);
  const chat = await post('/v1/chat/completions', { messages: user('x'), max_tokens: 1, id_slot: 99 });
  assert.equal(chat.status, 400);
});

test('a generation that fills the context stops with truncated: true and finish_reason length', async () => {
  const r = await post('/completion', { prompt: 'go', n_predict: SLOT_CTX * 2, ignore_eos: true, ...greedy });
  assert.equal(r.json.truncated, true);
  assert.equal(r.json.stop_type, 'limit');
  // The cache holds SLOT_CTX positions; the token sampled from the last of them needs none.
  const total = r.json.tokens_evaluated + r.json.tokens_predicted;
  assert.ok(total >= SLOT_CTX && total <= SLOT_CTX + 1, String(total));
  const o = await oa.completions.create({ model: 'x', prompt: 'go', max_tokens: SLOT_CTX * 2, ignore_eos: true, ...greedy });
  assert.equal(o.choices[0].finish_reason, 'length');
  const small = await post('/completion', { prompt: 'go', n_predict: 2, ignore_eos: true, ...greedy });
  assert.equal(small.json.truncated, false);
});

test('native /completions answers in llama.cpp\'s format', async () => {
  const r = await post('/completions', { prompt: 'Hi', n_predict: 2, ...greedy });
  assert.equal(r.status, 200);
  assert.equal(typeof r.json.content, 'string');
  assert.equal(r.json.stop, true);
  assert.ok('generation_settings' in r.json);
  assert.ok(!('choices' in r.json));
});

test('without --seed, requests that set none draw different seeds', async () => {
  const req = { prompt: 'Once', n_predict: 12, temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, ignore_eos: true };
  const a = await post('/completion', req);
  const b = await post('/completion', req);
  assert.notEqual(a.json.generation_settings.seed, b.json.generation_settings.seed);
  assert.notEqual(a.json.content, b.json.content);
});

test('system_fingerprint is the build id', async () => {
  const r = await oa.chat.completions.create({ model: 'x', messages: user('x'), max_tokens: 1 });
  assert.match(r.system_fingerprint, /^b[0-9a-f]{7,}$/);
  const c = await oa.completions.create({ model: 'x', prompt: 'x', max_tokens: 1 });
  assert.equal(c.system_fingerprint, r.system_fingerprint);
});

test('CORS: the Origin is echoed; a preflight is a 200 with credentials allowed', async () => {
  const pre = await raw('OPTIONS', '/completions', {
    Origin: 'http://web.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'Authorization',
  });
  assert.equal(pre.status, 200);
  assert.equal(pre.headers['access-control-allow-origin'], 'http://web.example');
  assert.equal(pre.headers['access-control-allow-credentials'], 'true');
  assert.equal(pre.headers['access-control-allow-methods'], 'GET, POST');
  assert.equal(pre.headers['access-control-allow-headers'], '*');
  const g = await raw('GET', '/health', { Origin: 'http://other.example' });
  assert.equal(g.status, 200);
  assert.equal(g.headers['access-control-allow-origin'], 'http://other.example');
  assert.equal(g.headers['access-control-allow-credentials'], 'true');
});
