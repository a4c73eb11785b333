// Tool calls end to end, with a model that really generates them: the CTest
// driver serves a scripted model (oscar-mkmodel --script, the chains in
// tests/server/data/weather_agent.json) with the Qwen3 template. Greedy, it
// answers a question with a Hermes/Qwen3 <tool_call> to get_weather and,
// once a <tool_response> is in its context, with a plain sentence. So the
// official client sees a call come back (whole and streamed), sends the
// result back as a role "tool" message, and gets the final answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, post } from './common.mjs';

const oa = client();
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather of a city',
  parameters: { type: 'object', required: ['city'],
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } } } } }];
const question = [{ role: 'user', content: 'What is the weather in Paris?' }];
const req = { model: 'x', messages: question, tools, temperature: 0, max_tokens: 32 };
// What the script makes the model write (see weather_agent.json).
const ARGS = { city: 'Paris', unit: 'celsius' };
const ANSWER = 'It is sunny and 21 degrees in Paris.';
const RESULT = JSON.stringify({ temperature: 21, sky: 'sunny' });

// Reads a stream the way a client assembles it: content, and tool calls
// by their index (the first delta of a call brings id, type and name;
// arguments may come in pieces).
async function collect(stream) {
  let content = '', finish = null;
  const calls = [];
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta?.content) content += c.delta.content;
    for (const d of c.delta?.tool_calls ?? []) {
      assert.ok(Number.isInteger(d.index), JSON.stringify(d));
      if (!calls[d.index]) {
        assert.equal(typeof d.id, 'string', JSON.stringify(d));
        assert.equal(d.type, 'function');
        calls[d.index] = { id: d.id, type: d.type, function: { name: '', arguments: '' } };
      }
      calls[d.index].function.name += d.function?.name ?? '';
      calls[d.index].function.arguments += d.function?.arguments ?? '';
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  return { content, calls, finish };
}

let whole;  // the non-streamed call, reused by the later tests
async function wholeCall() {
  whole ??= await oa.chat.completions.create(req);
  return whole;
}

test('a generated tool call comes back as message.tool_calls', async () => {
  const r = await wholeCall();
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.role, 'assistant');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1, JSON.stringify(c.message));
  const call = c.message.tool_calls[0];
  assert.equal(typeof call.id, 'string');
  assert.ok(call.id.length > 0);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof call.function.arguments, 'string');
  assert.deepEqual(JSON.parse(call.function.arguments), ARGS);
});

test('streamed, the call arrives as tool_calls deltas that add up to the same call', async () => {
  const c = (await wholeCall()).choices[0].message.tool_calls[0];
  const s = await collect(await oa.chat.completions.create({ ...req, stream: true }));
  assert.equal(s.finish, 'tool_calls');
  assert.equal(s.content, '');
  assert.equal(s.calls.length, 1);
  assert.equal(s.calls[0].function.name, c.function.name);
  assert.equal(s.calls[0].function.arguments, c.function.arguments);
  // The client's own stream helper assembles (and checks) the same message.
  const final = await oa.beta.chat.completions.stream(req).finalChatCompletion();
  const m = final.choices[0].message;
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.tool_calls.length, 1);
  assert.equal(m.tool_calls[0].function.name, 'get_weather');
  assert.equal(m.tool_calls[0].function.arguments, c.function.arguments);
});

test('the result goes back as a role "tool" message; the answer is plain content', async () => {
  const msg = (await wholeCall()).choices[0].message;
  const call = msg.tool_calls[0];
  const messages = [...question, msg, { role: 'tool', tool_call_id: call.id, content: RESULT }];
  // The template renders the call and the response; the prompt ends where the model answers.
  const t = await post('/apply-template', { messages, tools });
  assert.equal(t.status, 200, t.text);
  const p = t.json.prompt;
  assert.ok(p.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>'), p);
  assert.ok(p.includes(`<|im_start|>user\n<tool_response>\n${RESULT}\n</tool_response><|im_end|>\n`), p);
  assert.ok(p.endsWith('<|im_start|>assistant\n'), p);

  // Tools are still offered, yet a text answer stays text: the parser invents no call.
  const r = await oa.chat.completions.create({ ...req, messages });
  assert.equal(r.choices[0].message.content, ANSWER);
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await collect(await oa.chat.completions.create({ ...req, messages, stream: true }));
  assert.deepEqual(s, { content: ANSWER, calls: [], finish: 'stop' });
});

test("the client's tool runner calls the function and finishes with the answer", async () => {
  for (const stream of [false, true]) {
    const seen = [];
    const getWeather = (args) => {
      seen.push(args);
      return RESULT;
    };
    const runner = oa.beta.chat.completions.runTools({
      model: 'x', messages: question, temperature: 0, max_tokens: 32, stream,
      tools: [{ type: 'function', function: { ...tools[0].function, function: getWeather, parse: JSON.parse } }],
    });
    assert.equal(await runner.finalContent(), ANSWER, `stream: ${stream}`);
    assert.deepEqual(seen, [ARGS]);
    const roles = runner.messages.map((m) => m.role);
    assert.deepEqual(roles, ['user', 'assistant', 'tool', 'assistant']);
    assert.equal(runner.messages[2].tool_call_id, runner.messages[1].tool_calls[0].id);
  }
});

test('without tools on offer the same text is content, not a call', async () => {
  const r = await oa.chat.completions.create({ ...req, tool_choice: 'none' });
  const m = r.choices[0].message;
  assert.equal(m.tool_calls, undefined);
  assert.equal(m.content, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>');
  assert.equal(r.choices[0].finish_reason, 'stop');
});
