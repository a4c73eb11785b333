// oscar-server's unified KV pool (the default): started with -c 2048 and no
// -np (4 slots), one conversation may use far more than 2048 / 4 positions;
// a prompt longer than the pool ever holds gets a 400 with the numbers; /props
// and /slots report the pool. With OSCAR_SPLIT=1 the server runs with
// --no-kv-unified, and the same long prompt is refused at 2048 / 4.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, get, post, SLOT_CTX, N_SLOTS } from './common.mjs';

const oa = client();
const split = process.env.OSCAR_SPLIT === '1';
const ids = (n) => Array.from({ length: n }, (_, i) => 3 + ((i * 7 + (i >> 5)) % 200));

test('/props and /slots report the pool', async () => {
  const p = await get('/props');
  assert.equal(p.status, 200);
  assert.equal(p.json.total_slots, N_SLOTS);
  assert.equal(p.json.default_generation_settings.n_ctx, SLOT_CTX);
  const pool = p.json.kv_pool;
  assert.equal(pool.unified, !split);
  assert.equal(pool.positions, 2048);
  assert.equal(pool.used_positions + pool.free_positions, pool.positions);
  const s = await get('/slots');
  assert.equal(s.json.length, N_SLOTS);
  for (const slot of s.json) assert.equal(typeof slot.kv_positions_held, 'number');
});

test('a 1500-token conversation with 4 slots in -c 2048', { skip: split }, async () => {
  const r = await oa.completions.create({ model: 'x', prompt: ids(1500), max_tokens: 4, ignore_eos: true, temperature: 0 });
  assert.equal(r.usage.prompt_tokens, 1500);
  assert.equal(r.usage.completion_tokens, 4);
  const s = await get('/slots');
  assert.ok(s.json.some((slot) => slot.kv_positions_held >= 1500), JSON.stringify(s.json));
});

test('a prompt that can never fit: 400 with the numbers', async () => {
  const n = split ? 1500 : 2500;
  const r = await post('/v1/completions', { prompt: ids(n), max_tokens: 1 });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.type, 'exceed_context_size_error');
  assert.equal(r.json.error.n_ctx, SLOT_CTX);
  assert.equal(r.json.error.n_prompt_tokens, n);
  assert.match(r.json.error.message, new RegExp(`${n} tokens.*${SLOT_CTX}`));
});
