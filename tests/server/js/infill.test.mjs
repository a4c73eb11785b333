// POST /infill against the scripted model made with oscar-mkmodel --fim
// (its vocabulary carries Qwen2.5-Coder's FIM tokens): greedy, it answers
// <|fim_middle|> with "return a + b". The prompt's layout token by token is
// checked in test_infill_prompt.cpp; here its length and the native
// /completion-shaped answer, whole and streamed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, BASE, API_KEY } from './common.mjs';

const body = { input_prefix: 'def add(a, b):\n    ', input_suffix: '\n\nprint(add(1, 2))\n', temperature: 0, n_predict: 16 };
const count = async (text) => (await post('/tokenize', { content: text })).json.tokens.length;

test('the middle comes back in /completion\'s shape; the prompt has the FIM layout\'s length', async () => {
  const r = await post('/infill', body);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.content, 'return a + b');
  assert.equal(r.json.stop, true);
  assert.equal(r.json.stop_type, 'eos');
  // FIM_REP "myproject\n" FIM_SEP "filename\n" FIM_PRE prefix FIM_SUF suffix FIM_MID
  const n = 5 + await count('myproject\n') + await count('filename\n') + await count(body.input_prefix) +
    await count(body.input_suffix);
  assert.equal(r.json.tokens_evaluated, n);
  // Other files go before the prefix, each behind FIM_SEP and its name.
  const extra = await post('/infill', { ...body, input_extra: [{ filename: 'util.py', text: 'X = 1\n' }] });
  assert.equal(extra.json.tokens_evaluated, n + 1 + await count('util.py\n') + await count('X = 1\n'));
  assert.equal(extra.json.content, 'return a + b');
});

test('streamed, the same middle arrives as native chunks', async () => {
  const r = await fetch(BASE + '/infill', { method: 'POST', headers: { 'Content-Type': 'application/json',
    Authorization: 'Bearer ' + API_KEY }, body: JSON.stringify({ ...body, stream: true }) });
  assert.equal(r.status, 200);
  const chunks = (await r.text()).split('\n\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  assert.equal(chunks.map((c) => c.content).join(''), 'return a + b');
  assert.equal(chunks.at(-1).stop, true);
});

test('bad infill input is a 400', async () => {
  for (const [b, needle] of [[{ input_suffix: '' }, /input_prefix/], [{ input_prefix: '' }, /input_suffix/],
    [{ ...body, input_extra: 'x' }, /input_extra/], [{ ...body, input_extra: [{ filename: 'a' }] }, /text/],
    [{ ...body, prompt: 3 }, /prompt/], [{ ...body, input_prefix: [1e9] }, /token ids/]]) {
    const r = await post('/infill', b);
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, needle);
  }
});
