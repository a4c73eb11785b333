// oscar-server on a real trained model (stories260K): the text itself is
// checked, so stop strings and streaming are judged on real words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, post } from './common.mjs';

const oa = client();
const greedy = { temperature: 0 };

test('greedy continuation of BOS is the known story opening', async () => {
  const r = await oa.completions.create({ model: 'x', prompt: '', max_tokens: 15, ...greedy });
  assert.equal(r.choices[0].text, 'Once upon a time, there was a little girl named Lily.');
  const n = await post('/completion', { prompt: '', n_predict: 15, temperature: 0 });
  assert.equal(n.json.content, r.choices[0].text);
});

test('a continuation keeps its leading space', async () => {
  const r = await oa.completions.create({ model: 'x', prompt: 'Once upon a', max_tokens: 2, ...greedy });
  assert.equal(r.choices[0].text, ' time,');
});

test('stop strings end generation and are never emitted', async () => {
  // Find a stop string inside the greedy continuation, then ask again with it.
  const base = { model: "x", prompt: "", max_tokens: 24, ...greedy };
  const full = (await oa.completions.create(base)).choices[0].text;
  if (full.length < 6) return;  // model said too little to cut
  const stop = full.slice(3, 6);
  const cut = full.slice(0, full.indexOf(stop));
  const r = await oa.completions.create({ ...base, stop: [stop] });
  assert.equal(r.choices[0].text, cut);
  assert.equal(r.choices[0].finish_reason, 'stop');
  let text = '';
  for await (const c of await oa.completions.create({ ...base, stop: [stop], stream: true })) text += c.choices[0]?.text ?? '';
  assert.equal(text, cut);
});

test('a stop string split across tokens is held back, never emitted in part', async () => {
  // "little girl" spans several tokens; the stream must stop right before it.
  const req = { model: 'x', prompt: '', max_tokens: 30, stop: ['little girl', 'zzz'], ...greedy };
  const chunks = [];
  for await (const c of await oa.completions.create({ ...req, stream: true })) chunks.push(c.choices[0]?.text ?? '');
  const text = chunks.join('');
  assert.equal(text, 'Once upon a time, there was a ');
  assert.ok(!chunks.some((c) => c.includes('lit')));
  const native = await post('/completion', { prompt: '', n_predict: 30, stop: ['little girl'], temperature: 0 });
  assert.equal(native.json.content, text);
  assert.equal(native.json.stop_type, 'word');
  assert.equal(native.json.stopping_word, 'little girl');
});

test('chat through the fallback template streams the same text as non-streamed', async () => {
  const req = { model: 'x', messages: [{ role: 'user', content: 'Tell me about Lily.' }], max_tokens: 20, ...greedy };
  const whole = await oa.chat.completions.create(req);
  let text = '';
  for await (const c of await oa.chat.completions.create({ ...req, stream: true })) text += c.choices[0]?.delta?.content ?? '';
  assert.equal(text, whole.choices[0].message.content);
  assert.ok(text.length > 0);
});

test('prefix reuse: the second identical prompt reuses the cache and gives the same text', async () => {
  const prompt = 'Once upon a time, there was a boy named Tim. He liked to';
  const a = await post('/completion', { prompt, n_predict: 8, temperature: 0, id_slot: 0 });
  const b = await post('/completion', { prompt, n_predict: 8, temperature: 0, id_slot: 0 });
  assert.equal(a.json.content, b.json.content);
  assert.equal(b.json.timings.cache_n, a.json.tokens_evaluated - 1);
});

test('a BOS model gets exactly one BOS in front of a chat prompt the template did not give one', async () => {
  const messages = [{ role: 'user', content: 'Hi' }];
  const r = await oa.chat.completions.create({ model: 'x', messages, max_tokens: 1, ...greedy });
  const t = await post('/apply-template', { messages });
  const plain = await post('/tokenize', { content: t.json.prompt, add_special: false });
  const withBos = await post('/tokenize', { content: t.json.prompt, add_special: true });
  assert.equal(withBos.json.tokens.length, plain.json.tokens.length + 1);
  assert.equal(r.usage.prompt_tokens, withBos.json.tokens.length);
});
