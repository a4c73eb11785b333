// Function calls and reasoning through the Responses API of the official
// openai client, with the scripted model of anthropic_agent.test.mjs
// (thinks, calls get_weather, answers from the tool output).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, post } from './common.mjs';

const oa = client();
const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
const req = { model: 'oscar', input: 'What is the weather in Paris?', tools, temperature: 0, max_output_tokens: 40 };

function checkCallTurn(r) {
  assert.equal(r.status, 'completed', JSON.stringify(r));
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'function_call'], JSON.stringify(r.output));
  assert.equal(r.output[0].content[0].text.trim(), 'The user wants the weather.');
  const call = r.output[1];
  assert.equal(call.name, 'get_weather');
  assert.equal(call.status, 'completed');
  assert.match(call.call_id, /^call_/);
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  assert.equal(r.output_text, '');
}

test('a generated call comes back as a function_call item after a reasoning item', async () => {
  checkCallTurn(await oa.responses.create(req));
});

test('streamed: reasoning and function-call argument events, then the same output', async () => {
  const events = [];
  for await (const ev of await oa.responses.create({ ...req, stream: true })) events.push(ev);
  const types = events.map((e) => e.type);
  assert.equal(types.at(-1), 'response.completed');
  for (const t of ['response.reasoning_text.delta', 'response.function_call_arguments.delta',
    'response.function_call_arguments.done'])
    assert.ok(types.includes(t), types.join());
  assert.equal(types.filter((t) => t === 'response.output_item.added').length, 2);
  assert.equal(types.filter((t) => t === 'response.output_item.done').length, 2);
  const args = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.equal(args.output_index, 1);
  assert.deepEqual(JSON.parse(args.arguments), { city: 'Paris' });
  checkCallTurn(events.at(-1).response);
  const final = await oa.responses.stream(req).finalResponse();
  checkCallTurn(final);
});

test('the function output sent back as an item leads to the answer', async () => {
  const first = await oa.responses.create(req);
  const call = first.output.find((o) => o.type === 'function_call');
  const input = [{ role: 'user', content: 'What is the weather in Paris?' }, ...first.output,
    { type: 'function_call_output', call_id: call.call_id, output: '21 C, sunny' }];
  const r = await oa.responses.create({ ...req, input });
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, 'It is sunny in Paris.');
  assert.deepEqual(r.output.map((o) => o.type), ['message']);
  // The prompt is the one the chat API builds from the same conversation.
  const chat = await post('/v1/chat/completions', { tools: [{ type: 'function', function: { name: 'get_weather',
    description: tools[0].description, parameters: tools[0].parameters } }], temperature: 0, max_tokens: 40,
    messages: [{ role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: '', reasoning_content: first.output[0].content[0].text,
        tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: call.arguments } }] },
      { role: 'tool', tool_call_id: call.call_id, content: '21 C, sunny' }] });
  assert.equal(r.usage.input_tokens, chat.json.usage.prompt_tokens);
  assert.equal(chat.json.choices[0].message.content, 'It is sunny in Paris.');
});
