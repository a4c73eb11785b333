// --api-key: every endpoint needs the key but the ones llama-server leaves
// public (/health, /models, the web UI's files).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { BASE, API_KEY } from './common.mjs';

test('health needs no key', async () => {
  const r = await fetch(BASE + '/health');
  assert.equal(r.status, 200);
});

for (const [method, path] of [['POST', '/v1/chat/completions'], ['POST', '/completion'],
  ['POST', '/tokenize'], ['GET', '/props'], ['GET', '/slots'], ['GET', '/metrics'], ['GET', '/nope']]) {
  test(`${method} ${path} refuses a missing or wrong key`, async () => {
    for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: 'Bearer ' + API_KEY + 'x' },
      { Authorization: 'Bearer ' + API_KEY.slice(0, -1) }]) {
      const r = await fetch(BASE + path, { method, headers, body: method === 'POST' ? '{}' : undefined });
      assert.equal(r.status, 401);
      const j = await r.json();
      assert.equal(j.error.type, 'authentication_error');
    }
  });
}

test('the official client with the right key is served', async () => {
  const oa = new OpenAI({ baseURL: BASE + '/v1', apiKey: API_KEY, maxRetries: 0 });
  const r = await oa.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.equal(r.choices.length, 1);
  assert.equal(r.model, 'my-model');  // -a alias
  assert.equal((await oa.models.list()).data[0].id, 'my-model');
  const bad = new OpenAI({ baseURL: BASE + '/v1', apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(bad.completions.create({ model: 'x', prompt: 'hi', max_tokens: 1 }), (e) => e.status === 401);
});

test('X-Api-Key is accepted too', async () => {
  const r = await fetch(BASE + '/props', { headers: { 'X-Api-Key': API_KEY } });
  assert.equal(r.status, 200);
});
