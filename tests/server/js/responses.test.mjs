// The OpenAI Responses API through the official openai client against a
// random-weight model on the q2_0 cache (the text is noise; shapes, counts,
// the event sequence and errors are checked).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { client, post, get } from './common.mjs';

const oa = client();
const base = { model: 'oscar', input: 'Hello there', max_output_tokens: 8, temperature: 0 };

async function chatText(messages, max_tokens) {
  const r = await post('/v1/chat/completions', { messages, max_tokens, temperature: 0 });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

test('a plain response: one message item, incomplete at max_output_tokens, usage counted', async () => {
  const r = await oa.responses.create({ ...base, instructions: 'You are terse.' });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.store, false);
  assert.equal(r.instructions, 'You are terse.');
  assert.equal(r.usage.output_tokens, 8);
  assert.ok(r.output.length <= 1, JSON.stringify(r.output));
  for (const item of r.output) {
    assert.equal(item.type, 'message');
    assert.equal(item.role, 'assistant');
    assert.equal(item.content[0].type, 'output_text');
  }
  // Same prompt and greedy text as the chat API.
  const chat = await chatText([{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello there' }], 8);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(r.output_text, chat.choices[0].message.content);
});

test('input items with input_text parts render like the plain string', async () => {
  const a = await oa.responses.create({ ...base, max_output_tokens: 1, input: 'one\ntwo' });
  const b = await oa.responses.create({ ...base, max_output_tokens: 1, input: [{ type: 'message', role: 'user',
    content: [{ type: 'input_text', text: 'one' }, { type: 'input_text', text: 'two' }] }] });
  assert.equal(b.usage.input_tokens, a.usage.input_tokens);
  // Earlier assistant output (output_text parts) is part of the prompt.
  const c = await oa.responses.create({ ...base, max_output_tokens: 1, input: [{ role: 'user', content: 'one' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'two', annotations: [] }] },
    { role: 'user', content: 'three' }] });
  const chat = await chatText([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' },
    { role: 'user', content: 'three' }], 1);
  assert.equal(c.usage.input_tokens, chat.usage.prompt_tokens);
});

test('streamed: the Responses event sequence, numbered, adds up to the whole response', async () => {
  const whole = await oa.responses.create({ ...base, max_output_tokens: 12 });
  const events = [];
  for await (const ev of await oa.responses.create({ ...base, max_output_tokens: 12, stream: true })) events.push(ev);
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
  assert.equal(types.at(-1), 'response.incomplete');
  events.forEach((e, i) => assert.equal(e.sequence_number, i));
  assert.equal(events[0].response.status, 'in_progress');
  let text = '';
  for (const e of events) if (e.type === 'response.output_text.delta') text += e.delta;
  assert.equal(text, whole.output_text);
  if (text) {
    const want = ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done'];
    const seen = types.filter((t) => want.includes(t));
    assert.deepEqual([...new Set(seen)], want);
    assert.equal(events.find((e) => e.type === 'response.output_text.done').text, text);
  }
  const last = events.at(-1).response;
  assert.equal(last.usage.output_tokens, 12);
  assert.deepEqual(last.output, whole.output.map((o) => ({ ...o, id: last.output[0].id })));
  // The SDK's stream helper accumulates the same text.
  const final = await oa.responses.stream({ ...base, max_output_tokens: 12 }).finalResponse();
  assert.equal(final.output.map((o) => o.content[0].text).join(''), whole.output_text);
});

test('bad input: 400 with OpenAI\'s error shape', async () => {
  const cases = [
    [{ ...base, previous_response_id: 'resp_123' }, /previous_response_id/],
    [{ model: 'oscar' }, /input/],
    [{ ...base, input: 42 }, /input/],
    [{ ...base, input: [{ type: 'bogus' }] }, /bogus/],
    [{ ...base, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'http://x/y.png' }] }] }, /input_image/],
    [{ ...base, input: [{ type: 'function_call_output', call_id: 'call_nope', output: 'x' }] }, /call_nope/],
    [{ ...base, input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: 'not json' }] }, /arguments/],
    [{ ...base, tools: [{ type: 'web_search' }] }, /web_search/],
    [{ ...base, max_output_tokens: 0 }, /max_output_tokens/],
    [{ ...base, temperature: 'x' }, /temperature/],
    [{ ...base, input: [{ role: 'tool', content: 'x' }] }, /role/],
  ];
  for (const [body, needle] of cases) {
    const r = await post('/v1/responses', body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.type, 'invalid_request_error', r.text);
    assert.match(r.json.error.message, needle);
  }
  await assert.rejects(oa.responses.create({ ...base, previous_response_id: 'resp_1' }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    return true;
  });
  const got = await get('/v1/responses/resp_1');
  assert.equal(got.status, 404);
});
