// Shared prompt prefixes in oscar-server's KV pool (docs/kv-pool.md): two
// conversations that start with the same 1500 tokens store them once. The
// second reports them as cached (OpenAI usage.prompt_tokens_details.cached_tokens,
// native timings.cache_n), its output is the one it gets with nothing
// reused, the first conversation keeps its whole cache, and /props,
// /slots and /metrics count the shared pages once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, get, post } from './common.mjs';

const oa = client();
const ids = (seed, n) => Array.from({ length: n }, (_, i) => 3 + ((seed * 31 + i * 7 + (i >> 5)) % 200));
const prefix = ids(1, 1500);
const a = [...prefix, ...ids(2, 100)];
const b = [...prefix, ...ids(3, 120)];
const greedy = { model: 'x', max_tokens: 8, temperature: 0, ignore_eos: true };

test('a second conversation shares the first one\'s prefix and says so in usage', async () => {
  const ra = await oa.completions.create({ ...greedy, prompt: a });
  assert.equal(ra.usage.prompt_tokens, a.length);
  assert.equal(ra.usage.prompt_tokens_details.cached_tokens, 0);

  const rb = await oa.completions.create({ ...greedy, prompt: b });
  assert.equal(rb.usage.prompt_tokens, b.length);
  assert.equal(rb.usage.prompt_tokens_details.cached_tokens, prefix.length);

  // The pool lists the shared pages once.
  const props = await get('/props');
  const pool = props.json.kv_pool;
  assert.ok(pool.shared_positions >= 256, JSON.stringify(pool));
  assert.equal(pool.prefixes_shared, 1);
  const slots = await get('/slots');
  const held = slots.json.reduce((n, s) => n + s.kv_positions_held, 0);
  assert.equal(pool.used_positions, held - pool.shared_positions, JSON.stringify(slots.json));
  const metrics = await get('/metrics');
  const gauge = metrics.text.match(/^oscar:kv_pool_shared_positions (\d+)/m);
  assert.ok(gauge, metrics.text);
  assert.equal(Number(gauge[1]), pool.shared_positions);

  // The same prompt with nothing reused gives the same greedy text.
  const alone = await oa.completions.create({ ...greedy, prompt: b, cache_prompt: false });
  assert.equal(alone.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(alone.choices[0].text, rb.choices[0].text);
});

test('the first conversation kept its whole cache; the native API reports cache_n', async () => {
  // a's slot still holds a and 7 of its 8 answer tokens (the last was never
  // evaluated): asking a again reuses all of a but its last token.
  const again = await oa.completions.create({ ...greedy, prompt: a });
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, a.length - 1);
  const c = [...prefix, ...ids(4, 40)];
  const r = await post('/completion', { prompt: c, n_predict: 4, temperature: 0 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.timings.cache_n, prefix.length);
  assert.equal(r.json.tokens_evaluated, c.length);
});
