// The Anthropic Messages API through the official @anthropic-ai/sdk against a
// random-weight model (so the text is noise, but its shape, counts, limits
// and errors are checked): plain and streamed messages, count_tokens, the
// stream's event grammar, sampling fields, and every class of bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { post, BASE } from './common.mjs';
import { anthropic, postAnthropic, assertAnthropicError, rawEvents, assertEventGrammar } from './anthropic_common.mjs';

const client = anthropic();
const base = { model: 'oscar', max_tokens: 8, messages: [{ role: 'user', content: 'Hello there' }] };

test('a plain message: one text block, max_tokens reached, usage counted', async () => {
  const m = await client.messages.create({ ...base, temperature: 0, top_k: 1, top_p: 1,
    metadata: { user_id: 'u-1' }, system: 'You are terse.' });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.stop_sequence, null);
  assert.equal(m.usage.output_tokens, 8);
  assert.ok(m.content.length <= 1, JSON.stringify(m.content));
  for (const b of m.content) assert.equal(b.type, 'text');
  // The same conversation through the chat API: same prompt, same greedy text.
  const oai = await post('/v1/chat/completions', { messages: [{ role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Hello there' }], max_tokens: 8, temperature: 0 });
  assert.equal(oai.status, 200, oai.text);
  assert.equal(m.usage.input_tokens, oai.json.usage.prompt_tokens);
  assert.equal(m.content[0]?.text ?? '', oai.json.choices[0].message.content);
});

test('system as blocks and multi-part user content render like the string forms', async () => {
  const a = await client.messages.countTokens({ model: 'oscar', system: 'Be brief.',
    messages: [{ role: 'user', content: 'one\ntwo' }] });
  const b = await client.messages.countTokens({ model: 'oscar', system: [{ type: 'text', text: 'Be brief.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }] });
  assert.ok(a.input_tokens > 5, JSON.stringify(a));
  assert.equal(b.input_tokens, a.input_tokens);
  const longer = await client.messages.countTokens({ model: 'oscar', system: 'Be brief.',
    messages: [{ role: 'user', content: 'one\ntwo three four five six' }] });
  assert.ok(longer.input_tokens > a.input_tokens);
});

test('count_tokens equals the prompt the generation reports', async () => {
  const c = await client.messages.countTokens({ model: 'oscar', messages: base.messages });
  const m = await client.messages.create({ ...base, max_tokens: 1 });
  assert.equal(c.input_tokens, m.usage.input_tokens);
});

test('streamed: the SDK assembles the same message as the whole call (greedy)', async () => {
  const req = { ...base, max_tokens: 12, temperature: 0 };
  const whole = await client.messages.create(req);
  const stream = client.messages.stream(req);
  let deltas = '';
  stream.on('text', (t) => { deltas += t; });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, 'max_tokens');
  assert.equal(final.usage.output_tokens, 12);
  assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
  assert.deepEqual(final.content, whole.content);
  assert.equal(deltas, whole.content[0]?.text ?? '');
});

// Greedy: this model's first tokens after the prompt hold no end of turn (see the plain test).
test('the raw event stream follows Anthropic\'s grammar with named events', async () => {
  const events = await rawEvents({ ...base, max_tokens: 6, temperature: 0 });
  const n = assertEventGrammar(events);
  assert.ok(n <= 1);
  const start = events[0].data.message;
  assert.equal(start.role, 'assistant');
  assert.deepEqual(start.content, []);
  assert.equal(start.stop_reason, null);
  const delta = events.at(-2).data;
  assert.equal(delta.delta.stop_reason, 'max_tokens');
  assert.equal(delta.usage.output_tokens, 6);
  for (const e of events.filter((x) => x.event === 'content_block_delta')) assert.equal(e.data.delta.type, 'text_delta');
});

test('bad input: 400 in Anthropic\'s error shape, through the SDK too', async () => {
  const ok = { model: 'oscar', max_tokens: 4 };
  const cases = [
    [{ model: 'oscar', messages: base.messages }, /max_tokens/],
    [{ ...ok, max_tokens: 0, messages: base.messages }, /max_tokens/],
    [{ ...ok }, /messages/],
    [{ ...ok, messages: [] }, /messages/],
    [{ ...ok, messages: [{ role: 'system', content: 'x' }] }, /role/],
    [{ ...ok, messages: [{ role: 'user', content: [{ type: 'bogus', text: 'x' }] }] }, /bogus/],
    [{ ...ok, messages: [{ role: 'user', content: [{ text: 'no type' }] }] }, /type/],
    [{ ...ok, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64',
      media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }, /image blocks are not supported/],
    [{ ...ok, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nope',
      content: 'x' }] }] }, /toolu_nope/],
    [{ ...ok, messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'a' }] }] }, /tool_result/],
    [{ ...ok, messages: base.messages, stop_sequences: 'x' }, /stop_sequences/],
    [{ ...ok, messages: base.messages, temperature: 'hot' }, /temperature/],
    [{ ...ok, messages: base.messages, metadata: 3 }, /metadata/],
    [{ ...ok, messages: base.messages, tools: [{ name: 'f' }] }, /input_schema/],
    [{ ...ok, messages: base.messages, tool_choice: { type: 'maybe' } }, /tool_choice/],
    [{ ...ok, messages: base.messages, system: [{ type: 'image' }] }, /system/],
    ['{"model": "oscar", ', /JSON/],
  ];
  for (const [body, needle] of cases) assertAnthropicError(await postAnthropic('/v1/messages', body), needle);
  assertAnthropicError(await postAnthropic('/v1/messages/count_tokens', { model: 'oscar', messages: [] }), /messages/);
  await assert.rejects(client.messages.create({ model: 'oscar', messages: base.messages }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'invalid_request_error');
    return true;
  });
});

test('a prompt longer than a slot is a 400 in Anthropic\'s shape', async () => {
  const slot = Number(process.env.OSCAR_SLOT_CTX);
  const r = await postAnthropic('/v1/messages', { model: 'oscar', max_tokens: 4,
    messages: [{ role: 'user', content: 'word '.repeat(slot + 10) }] });
  assertAnthropicError(r, /context/);
});

test('the key goes as x-api-key; a wrong one is a 401 in Anthropic\'s shape', async () => {
  const ok = await fetch(BASE + '/v1/messages/count_tokens', { method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': process.env.OSCAR_API_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'oscar', messages: base.messages }) });
  assert.equal(ok.status, 200);
  const bad = new Anthropic({ baseURL: BASE, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(bad.messages.create(base), (e) => {
    assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
    assert.deepEqual(e.error, { type: 'error', error: { type: 'authentication_error', message: 'Invalid API Key' } });
    return true;
  });
  const badVersion = await fetch(BASE + '/v1/messages', { method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': process.env.OSCAR_API_KEY, 'anthropic-version': 'yesterday' },
    body: JSON.stringify(base) });
  assert.equal(badVersion.status, 400);
  assert.equal((await badVersion.json()).error.type, 'invalid_request_error');
});
