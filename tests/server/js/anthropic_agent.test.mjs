// Thinking and tools through the official @anthropic-ai/sdk, with a model
// that really produces them: the CTest driver serves a scripted model
// (tests/server/data/thinking_agent.json) with the published Qwen3
// template. Greedy, it thinks ("The user wants the weather."), then calls
// get_weather; once a tool result is in its context it answers "It is sunny
// in Paris.". So the SDK sees a thinking block and a tool_use block (whole
// and streamed), sends them back with a tool_result, and gets the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anthropic, postAnthropic, assertAnthropicError, rawEvents, assertEventGrammar } from './anthropic_common.mjs';
import { post } from './common.mjs';

const client = anthropic();
const tools = [{ name: 'get_weather', description: 'Current weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
const question = { role: 'user', content: 'What is the weather in Paris?' };
const req = { model: 'oscar', max_tokens: 40, temperature: 0, tools, messages: [question] };
const THINKING = 'The user wants the weather.';

function checkCallTurn(m) {
  assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
  assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'tool_use'], JSON.stringify(m.content));
  assert.equal(m.content[0].thinking.trim(), THINKING);
  assert.equal(typeof m.content[0].signature, 'string');
  const call = m.content[1];
  assert.match(call.id, /^toolu_/);
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(call.input, { city: 'Paris' });
}

test('thinking and a tool call come back as thinking and tool_use blocks', async () => {
  checkCallTurn(await client.messages.create(req));
});

test('streamed, the SDK assembles the same thinking and tool_use blocks', async () => {
  const stream = client.messages.stream(req);
  let thinking = '';
  stream.on('thinking', (d) => { thinking += d; });
  const m = await stream.finalMessage();
  checkCallTurn(m);
  assert.equal(thinking, m.content[0].thinking);
  const events = await rawEvents(req);
  assert.equal(assertEventGrammar(events), 2);
  const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.type);
  assert.ok(deltas.includes('thinking_delta') && deltas.includes('input_json_delta'), deltas.join());
  assert.equal(events.at(-2).data.delta.stop_reason, 'tool_use');
});

test('the tool result (and the thinking) sent back lead to the final answer', async () => {
  const first = await client.messages.create(req);
  const call = first.content.find((b) => b.type === 'tool_use');
  const history = [question, { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: '21 C, sunny' }] }] }];
  const m = await client.messages.create({ ...req, messages: history });
  assert.equal(m.stop_reason, 'end_turn', JSON.stringify(m));
  assert.deepEqual(m.content, [{ type: 'text', text: 'It is sunny in Paris.' }]);
  // The template saw the thinking as reasoning_content and the result as a tool message;
  // is_error reaches the model as text.
  const renderedCount = async (result) => {
    const r = await post('/apply-template', { tools: tools.map((t) => ({ type: 'function', function: { name: t.name,
      description: t.description, parameters: t.input_schema } })), messages: [question,
      { role: 'assistant', content: '', reasoning_content: THINKING + '\n', tool_calls: [{ id: call.id, type: 'function',
        function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', tool_call_id: call.id, content: result }] });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.prompt.includes('<tool_response>\n' + result), r.json.prompt);
    return (await post('/tokenize', { content: r.json.prompt })).json.tokens.length;
  };
  assert.equal((await client.messages.countTokens({ model: 'oscar', tools, messages: history })).input_tokens,
    await renderedCount('21 C, sunny'));
  const failed = structuredClone(history);
  failed[2].content[0].is_error = true;
  assert.equal((await client.messages.countTokens({ model: 'oscar', tools, messages: failed })).input_tokens,
    await renderedCount('Error: 21 C, sunny'));
  // A tool_result for an id no assistant turn made is refused.
  const wrong = structuredClone(history);
  wrong[2].content[0].tool_use_id = 'toolu_unknown';
  assertAnthropicError(await postAnthropic('/v1/messages', { ...req, messages: wrong }), /toolu_unknown/);
});

test('stop_sequences end the turn with stop_reason stop_sequence', async () => {
  const first = await client.messages.create(req);
  const call = first.content.find((b) => b.type === 'tool_use');
  const history = [question, { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '21 C' }] }];
  const m = await client.messages.create({ ...req, messages: history, stop_sequences: [' in Paris'] });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, ' in Paris');
  assert.deepEqual(m.content, [{ type: 'text', text: 'It is sunny' }]);
});

test('without tools the call text stays text; thinking disabled closes the think block in the prompt', async () => {
  const m = await client.messages.create({ model: 'oscar', max_tokens: 40, temperature: 0, messages: [question] });
  assert.equal(m.content[0].type, 'thinking');
  assert.equal(m.content[1].type, 'text');
  assert.match(m.content[1].text, /<tool_call>/);
  const on = await client.messages.countTokens({ model: 'oscar', messages: [question] });
  const off = await client.messages.countTokens({ model: 'oscar', messages: [question], thinking: { type: 'disabled' } });
  assert.ok(off.input_tokens > on.input_tokens, `${off.input_tokens} vs ${on.input_tokens}`);
});
