// A server started without --embedding: the embedding routes say how to
// turn them on (501, as llama-server answers), reranking is a 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post } from './common.mjs';

test('embeddings need --embedding', async () => {
  for (const path of ['/v1/embeddings', '/embedding', '/embeddings']) {
    const r = await post(path, { input: 'hello', content: 'hello' });
    assert.equal(r.status, 501, r.text);
    assert.match(r.json.error.message, /--embeddings/);
  }
  const r = await post('/v1/rerank', { query: 'q', documents: ['a'] });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /not a reranker/);
});
