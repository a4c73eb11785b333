// Structured output end to end through the official OpenAI client, on a
// random-weight model with the real Qwen3 vocabulary (the model wants nothing
// valid, so every bit of structure comes from the grammar). Every output is
// also written to OSCAR_STRUCTURED_OUT for the CTest driver, which validates
// them with python3-jsonschema (a validator this project did not write).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';
import { client, post } from './common.mjs';

const oa = client();
const cases = [];  // {schema, outputs: [text]}
function record(schema, text) {
  let c = cases.find((x) => JSON.stringify(x.schema) === JSON.stringify(schema));
  if (!c) cases.push((c = { schema, outputs: [] }));
  c.outputs.push(text);
}
after(() => writeFileSync(process.env.OSCAR_STRUCTURED_OUT, JSON.stringify(cases)));

const messages = [{ role: 'user', content: 'Describe a person as JSON.' }];
const SCHEMAS = [
  { type: 'object', additionalProperties: false, required: ['name', 'age', 'tags'],
    properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0, maximum: 120 },
      tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 }, email: { type: 'string', format: 'uuid' } } },
  { type: 'array', prefixItems: [{ type: 'string', format: 'date' }, { type: 'number', minimum: -1, maximum: 1 }],
    items: false },
  { $defs: { p: { type: 'object', properties: { x: { type: 'integer' }, y: { anyOf: [{ type: 'null' }, { type: 'boolean' }] } },
    required: ['x', 'y'] } }, type: 'object', properties: { a: { $ref: '#/$defs/p' }, b: { type: ['string', 'null'], pattern: '^[a-z]{2,5}$' } },
    required: ['a', 'b'] },
];

test('response_format json_schema: every output parses and ends by itself', async () => {
  for (const [i, schema] of SCHEMAS.entries()) {
    for (let seed = 0; seed < 3; seed++) {
      const r = await oa.chat.completions.create({
        model: 'x', messages, seed, temperature: 1, max_tokens: 1500,
        response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
      });
      const text = r.choices[0].message.content;
      assert.equal(r.choices[0].finish_reason, 'stop', text);
      assert.doesNotThrow(() => JSON.parse(text), text);
      record(schema, text);
    }
  }
});

test('the constant "42" schema gives exactly "42"', async () => {
  const schema = { const: '42' };
  for (let seed = 0; seed < 3; seed++) {
    const r = await oa.chat.completions.create({
      model: 'x', messages, seed, temperature: 1, max_tokens: 50,
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema } },
    });
    assert.equal(JSON.parse(r.choices[0].message.content), '42');
    record(schema, r.choices[0].message.content);
  }
});

test('response_format json_object gives a JSON object', async () => {
  // A random model nests freely inside "any object" and may run out of
  // tokens; a cut output is only checked to start as an object.
  for (let seed = 0; seed < 2; seed++) {
    const r = await oa.chat.completions.create({
      model: 'x', messages, seed, temperature: 0.5, max_tokens: 120, response_format: { type: 'json_object' },
    });
    const text = r.choices[0].message.content;
    assert.match(text, /^\s*\{/);
    if (r.choices[0].finish_reason !== 'stop') continue;
    const v = JSON.parse(text);
    assert.equal(typeof v, 'object');
    assert.ok(v !== null && !Array.isArray(v), text);
  }
});

test('grammar and json_schema on /completion and /v1/completions', async () => {
  for (let seed = 0; seed < 3; seed++) {
    const r = await post('/completion', { prompt: 'Answer:', grammar: 'root ::= "yes" | "no" | [0-9]{2}', seed, n_predict: 20, temperature: 1 });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.content, /^(yes|no|[0-9]{2})$/);
    assert.equal(r.json.stop_type, 'eos', r.text);
  }
  const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 10, maximum: 20 } }, required: ['n'] };
  for (let seed = 0; seed < 2; seed++) {
    const r = await oa.completions.create({ model: 'x', prompt: 'JSON:', seed, max_tokens: 200, json_schema: schema });
    record(schema, r.choices[0].text);
  }
});

test('bad grammars and schemas are 400s that say what is wrong', async () => {
  const g = await post('/completion', { prompt: 'x', grammar: 'root ::= "a"\nfoo ::= ( "b"' });
  assert.equal(g.status, 400, g.text);
  assert.match(g.json.error.message, /invalid grammar: expected '\)' at line 2, column 14/);
  const u = await post('/completion', { prompt: 'x', grammar: 'root ::= nope' });
  assert.equal(u.status, 400);
  assert.match(u.json.error.message, /undefined rule 'nope'/);
  const s = await post('/v1/completions', { prompt: 'x', json_schema: { type: 'object', properties: { a: { not: {} } } } });
  assert.equal(s.status, 400);
  assert.match(s.json.error.message, /#\/properties\/a: unsupported keyword 'not'/);
  await assert.rejects(
    oa.chat.completions.create({ model: 'x', messages, response_format: { type: 'json_schema', json_schema: { name: 'e', schema: { type: 'string', format: 'email' } } } }),
    (e) => e instanceof OpenAI.BadRequestError && /format 'email' is not supported/.test(e.message));
  const both = await post('/completion', { prompt: 'x', grammar: 'root ::= "a"', json_schema: {} });
  assert.equal(both.status, 400);
});

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', additionalProperties: false, required: ['city', 'days'],
      properties: { city: { type: 'string', minLength: 1, maxLength: 16 }, days: { type: 'integer', minimum: 1, maximum: 7 },
        unit: { enum: ['celsius', 'fahrenheit'] } } } } },
  { type: 'function', function: { name: 'add', parameters: { type: 'object', required: ['a', 'b'],
    properties: { a: { type: 'number' }, b: { type: 'number' } } } } },
];

test('tool_choice required / named: the call parses and its arguments validate', async () => {
  for (let seed = 0; seed < 4; seed++) {
    const named = seed % 2 === 1;
    const r = await oa.chat.completions.create({
      model: 'x', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, seed, temperature: 1, max_tokens: 400,
      tool_choice: named ? { type: 'function', function: { name: 'get_weather' } } : 'required',
      parallel_tool_calls: false,
    });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r));
    assert.equal(m.tool_calls.length, 1, JSON.stringify(m));
    const call = m.tool_calls[0].function;
    if (named) assert.equal(call.name, 'get_weather');
    const tool = tools.find((t) => t.function.name === call.name);
    assert.ok(tool, call.name);
    record(tool.function.parameters, call.arguments);
  }
  const bad = await post('/v1/chat/completions', { messages, tools, tool_choice: { type: 'function', function: { name: 'nope' } } });
  assert.equal(bad.status, 400);
  assert.match(bad.json.error.message, /'nope'/);
});
