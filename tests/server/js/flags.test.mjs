// A llama-server launch line through the official OpenAI client: the server
// was started with --api-key k1,k2 -a tiny --tags chat,small --seed 7 -n 5
// --temp 1.0 --chat-template llama3 (see test_server_flags_launch.cpp).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { BASE } from './common.mjs';

const oa = (key) => new OpenAI({ baseURL: BASE + '/v1', apiKey: key, maxRetries: 0, timeout: 60_000 });

test('every key of --api-key k1,k2 is accepted, others are not', async () => {
  // The model list is public (as in llama-server); a completion needs the key.
  const ask = (key) => oa(key).completions.create({ model: 'tiny', prompt: 'a', max_tokens: 1 });
  for (const key of ['k1', 'k2']) assert.equal((await ask(key)).choices.length, 1);
  await assert.rejects(ask('k3'), (e) => e.status === 401);
});

test('--tags are listed with the model', async () => {
  const m = (await oa('k1').models.list()).data[0];
  assert.deepEqual(m.tags, ['chat', 'small']);
});

test('--seed and -n are the defaults of requests that set neither', async () => {
  const ask = () => oa('k2').chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }] });
  const a = await ask();
  const b = await ask();
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.ok(a.usage.completion_tokens <= 5, JSON.stringify(a.usage));
});

test('--chat-template llama3 lays out the prompt', async () => {
  const r = await fetch(BASE + '/apply-template', {
    method: 'POST', headers: { Authorization: 'Bearer k1', 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }] }),
  });
  const j = await r.json();
  assert.equal(j.prompt, '<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>' +
    '<|start_header_id|>assistant<|end_header_id|>\n\n');
});
