// oscar-server with a real Qwen3 vocabulary and a thinking chat template
// (QwQ's, which opens <think> in the prompt when enable_thinking is set):
// thinking goes to reasoning_content (or stays in content with
// --reasoning-format none), streamed and not; tools reach the template.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, post } from './common.mjs';

const oa = client();
const RAW = process.env.OSCAR_REASONING === 'none';
const thinking = { chat_template_kwargs: { enable_thinking: true } };
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

test('thinking output lands in reasoning_content (or content with --reasoning-format none)', async () => {
  const req = { model: 'x', messages, max_tokens: 12, ignore_eos: true, temperature: 0, ...thinking };
  const whole = await oa.chat.completions.create(req);
  const msg = whole.choices[0].message;
  let reasoning = '', content = '';
  for await (const c of await oa.chat.completions.create({ ...req, stream: true })) {
    const d = c.choices[0]?.delta ?? {};
    if (d.reasoning_content) reasoning += d.reasoning_content;
    if (d.content) content += d.content;
  }
  if (RAW) {
    assert.equal(msg.reasoning_content, undefined);
    assert.ok(msg.content.length > 0);
    assert.equal(content, msg.content);
    assert.equal(reasoning, '');
  } else {
    // A random-weight model never closes the block, so all of it is reasoning.
    assert.ok(msg.reasoning_content.length > 0);
    assert.equal(msg.content, '');
    assert.equal(reasoning, msg.reasoning_content);
    assert.equal(content, '');
  }
});

test('without enable_thinking the template closes the block and the text is content', async () => {
  const r = await oa.chat.completions.create({ model: 'x', messages, max_tokens: 6, ignore_eos: true, temperature: 0 });
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  const t = await post('/apply-template', { messages });
  assert.ok(t.json.prompt.endsWith('<think>\n</think>'), JSON.stringify(t.json.prompt));
});

test('tools reach the template; usage counts the rendered prompt', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const t = await post('/apply-template', { messages, tools });
  assert.match(t.json.prompt, /<tools>/);
  assert.match(t.json.prompt, /get_weather/);
  const r = await oa.chat.completions.create({ model: 'x', messages, tools, max_tokens: 4, ignore_eos: true, temperature: 0 });
  const toks = await post('/tokenize', { content: t.json.prompt });
  assert.equal(r.usage.prompt_tokens, toks.json.tokens.length);
  const m = r.choices[0].message;
  assert.ok(typeof m.content === 'string' || Array.isArray(m.tool_calls));
  // tool_choice none: the template sees no tools.
  const none = await post('/apply-template', { messages, tools, tool_choice: 'none' });
  assert.doesNotMatch(none.json.prompt, /get_weather/);
});

test('a conversation with an earlier tool call and its result renders and runs', async () => {
  const convo = [
    ...messages,
    { role: 'assistant', content: null, tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ];
  const t = await post('/apply-template', { messages: convo });
  assert.equal(t.status, 200, t.text);
  assert.match(t.json.prompt, /<tool_call>/);
  assert.match(t.json.prompt, /"city": "Paris"/);
  assert.match(t.json.prompt, /<tool_response>/);
  const r = await oa.chat.completions.create({ model: 'x', messages: convo, max_tokens: 3, temperature: 0 });
  assert.equal(r.choices.length, 1);
});

test('a request can choose its own reasoning_format', async () => {
  const req = { model: 'x', messages, max_tokens: 6, ignore_eos: true, temperature: 0, ...thinking };
  const raw = await oa.chat.completions.create({ ...req, reasoning_format: 'none' });
  assert.equal(raw.choices[0].message.reasoning_content, undefined);
  assert.ok(raw.choices[0].message.content.length > 0);
  const split = await oa.chat.completions.create({ ...req, reasoning_format: 'deepseek' });
  assert.equal(split.choices[0].message.reasoning_content.trim(), raw.choices[0].message.content.trim());
  const bad = await post('/v1/chat/completions', { ...req, reasoning_format: 'sideways' });
  assert.equal(bad.status, 400);
});
