// oscar-server with the OSCAR INT2 cache (--cache-type-k/v q2_0 and the
// LLAMA_KV_* variables): generation works, concurrency stays deterministic,
// and /metrics reports the tiers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, get } from './common.mjs';

const oa = client();

test('chat and completions run on the q2_0 cache', async () => {
  const c = await oa.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 40, ignore_eos: true, temperature: 0,
  });
  assert.equal(c.usage.completion_tokens, 40);
  let n = 0;
  for await (const ch of await oa.completions.create({ model: 'x', prompt: 'abc', max_tokens: 8, stream: true, temperature: 0 })) {
    if (ch.choices.length) n++;
  }
  assert.ok(n >= 1);
});

test('4 concurrent greedy streams equal each run alone (q2_0 tiers included)', async () => {
  const prompts = ['one two three', 'four five', 'six', 'seven eight nine ten'];
  const req = (p) => ({ model: 'x', prompt: p.repeat(3), max_tokens: 40, ignore_eos: true, temperature: 0, cache_prompt: false });
  const alone = [];
  for (const p of prompts) alone.push((await oa.completions.create(req(p))).choices[0].text);
  const together = await Promise.all(prompts.map((p) => oa.completions.create(req(p))));
  assert.deepEqual(together.map((r) => r.choices[0].text), alone);
});

test('metrics report the KV tiers and a sub-16-bit cache', async () => {
  const m = await get('/metrics');
  assert.equal(m.status, 200);
  const val = (name) => {
    const line = m.text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
    assert.ok(line, name + ' missing');
    return Number(line.split(' ').at(-1));
  };
  assert.ok(val('oscar:kv_bits_per_value') > 0 && val('oscar:kv_bits_per_value') < 16);
  assert.ok(val('oscar:kv_main_bits_per_value') <= 3.0);  // 2 bits + f16 scale and min per group of head_dim (32 here)
  assert.match(m.text, /oscar:kv_cells\{tier="main"\} [1-9]/);
  assert.match(m.text, /oscar:kv_cells\{tier="sink"\} [1-9]/);
  assert.ok(val('llamacpp:tokens_predicted_total') >= 40);
  assert.ok(val('llamacpp:prompt_tokens_total') > 0);
});
