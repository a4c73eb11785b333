// A model whose GGUF names no FIM tokens cannot infill: a clear 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post } from './common.mjs';

test('/infill without FIM tokens in the vocabulary', async () => {
  const r = await post('/infill', { input_prefix: 'def f():', input_suffix: '' });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.type, 'invalid_request_error');
  assert.match(r.json.error.message, /Infill is not supported by this model.*prefix token is missing/);
});
