// Embeddings through the official openai client (server started with
// --embedding, default pooling: last token, on the q2_0 cache): several
// inputs, token-id inputs, base64, L2 norm, cosine of a text with itself,
// the native /embedding shape, and bad input. (The values themselves are
// checked against a NumPy reference in embeddings_reference.py.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, post, get } from './common.mjs';

const oa = client();
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
const norm = (a) => Math.sqrt(dot(a, a));

test('several inputs: unit vectors, a text\'s cosine with itself is 1, different texts less', async () => {
  const texts = ['The cat sat on the mat.', 'The cat sat on the mat.', 'Quantum chromodynamics'];
  const r = await oa.embeddings.create({ model: 'oscar', input: texts, encoding_format: 'float' });
  assert.equal(r.object, 'list');
  assert.equal(r.data.length, 3);
  r.data.forEach((d, i) => {
    assert.equal(d.object, 'embedding');
    assert.equal(d.index, i);
    assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5, String(norm(d.embedding)));
  });
  const [a, b, c] = r.data.map((d) => d.embedding);
  assert.ok(Math.abs(dot(a, b) - 1) < 1e-5);
  assert.ok(dot(a, c) < 0.999, String(dot(a, c)));
  const props = (await get('/v1/models')).json;
  assert.equal(a.length, props.data[0].meta.n_embd);
  const counts = await Promise.all(texts.map((t) => post('/tokenize', { content: t, add_special: true })));
  assert.equal(r.usage.prompt_tokens, counts.reduce((s, x) => s + x.json.tokens.length, 0));
});

test('token-id input gives the embedding of the text it encodes', async () => {
  const text = 'hello world';
  const toks = (await post('/tokenize', { content: text, add_special: true })).json.tokens;
  const r = await oa.embeddings.create({ model: 'oscar', input: [text, toks], encoding_format: 'float' });
  assert.deepEqual(r.data[1].embedding, r.data[0].embedding);
  const single = await oa.embeddings.create({ model: 'oscar', input: toks, encoding_format: 'float' });
  assert.deepEqual(single.data[0].embedding, r.data[0].embedding);
});

test('base64 carries the same float32 values (the client decodes it by default)', async () => {
  const f = await oa.embeddings.create({ model: 'oscar', input: 'hello', encoding_format: 'float' });
  const raw = await post('/v1/embeddings', { input: 'hello', encoding_format: 'base64' });
  assert.equal(typeof raw.json.data[0].embedding, 'string');
  const buf = Buffer.from(raw.json.data[0].embedding, 'base64');
  const decoded = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4));
  assert.deepEqual(decoded, f.data[0].embedding.map((x) => Math.fround(x)));
  const viaClient = await oa.embeddings.create({ model: 'oscar', input: 'hello' });  // base64 on the wire
  assert.deepEqual(viaClient.data[0].embedding, decoded);
});

test('native /embedding and /embeddings: [{index, embedding: [[pooled]]}]', async () => {
  const oai = await oa.embeddings.create({ model: 'oscar', input: 'hello', encoding_format: 'float' });
  for (const path of ['/embedding', '/embeddings']) {
    const r = await post(path, { content: 'hello' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.length, 1);
    assert.equal(r.json[0].index, 0);
    assert.equal(r.json[0].embedding.length, 1);
    r.json[0].embedding[0].forEach((x, i) => assert.ok(Math.abs(x - oai.data[0].embedding[i]) < 1e-6));
  }
  const raw = await post('/embeddings', { content: 'hello', embd_normalize: -1 });
  const v = raw.json[0].embedding[0];
  const n = norm(v);
  assert.ok(Math.abs(n - 1) > 1e-3, 'unnormalised vector has norm ' + n);
  v.forEach((x, i) => assert.ok(Math.abs(x / n - oai.data[0].embedding[i]) < 1e-5));
});

test('bad input: 400 with OpenAI\'s error shape; reranking: not a reranker', async () => {
  const cases = [
    [{}, /input/],
    [{ input: '' }, /empty/],
    [{ input: [] }, /input/],
    [{ input: [[1, 2], 'x', 7] }, /input/],
    [{ input: [999999] }, /vocabulary/],
    [{ input: 3 }, /input/],
    [{ input: 'x', encoding_format: 'int8' }, /encoding_format/],
    [{ input: 'x'.repeat(40000) }, /tokens/],
  ];
  for (const [body, needle] of cases) {
    const r = await post('/v1/embeddings', body);
    assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80) + ' ' + r.text);
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.match(r.json.error.message, needle);
  }
  for (const path of ['/v1/rerank', '/rerank', '/reranking', '/v1/reranking']) {
    const r = await post(path, { query: 'q', documents: ['a', 'b'] });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /not a reranker/);
  }
});
