// A server started with --context-shift: a generation longer than its
// context goes on (the oldest generated tokens after the kept prompt are
// dropped), ends when n_predict is reached, and says truncated: true, as
// llama-server does; the counter in /metrics moves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, post, get, SLOT_CTX } from './common.mjs';

const oa = client();
const greedy = { temperature: 0 };

test('a generation past the context shifts and reaches n_predict', async () => {
  const n = SLOT_CTX * 3;
  const r = await post('/completion', { prompt: 'go', n_predict: n, ignore_eos: true, n_keep: -1, ...greedy });
  assert.equal(r.status, 200);
  assert.equal(r.json.tokens_predicted, n);
  assert.equal(r.json.truncated, true);
  assert.equal(r.json.stop_type, 'limit');
  assert.equal(r.json.generation_settings.n_keep, -1);
  const metrics = (await get('/metrics')).text;
  const shifts = Number(/^oscar:context_shifts_total (\S+)$/m.exec(metrics)[1]);
  assert.ok(shifts >= 2, metrics);
});

test('the OpenAI client gets every token it asked for', async () => {
  const o = await oa.completions.create({ model: 'x', prompt: 'go', max_tokens: SLOT_CTX * 2, ignore_eos: true, n_discard: 16, ...greedy });
  assert.equal(o.choices[0].finish_reason, 'length');
  assert.equal(o.usage.completion_tokens, SLOT_CTX * 2);
});

test('a short generation is not truncated', async () => {
  const r = await post('/completion', { prompt: 'go', n_predict: 4, ignore_eos: true, ...greedy });
  assert.equal(r.json.truncated, false);
});

test('n_keep and n_discard are checked', async () => {
  assert.equal((await post('/completion', { prompt: 'go', n_predict: 1, n_keep: -2 })).status, 400);
  assert.equal((await post('/completion', { prompt: 'go', n_predict: 1, n_discard: 'x' })).status, 400);
});
