// A server started with --api-key and --seed. The endpoints llama-server
// leaves public answer without a key, everything else wants one, and CORS
// preflights (which browsers send without credentials) are answered before
// any key check. Requests without a seed use --seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, API_KEY } from './common.mjs';

const noKey = (path, init = {}) => fetch(BASE + path, init);

test('health and the model list are public', async () => {
  for (const path of ['/health', '/v1/health', '/models', '/v1/models']) {
    const r = await noKey(path);
    assert.equal(r.status, 200, path);
    assert.ok(!('error' in (await r.json())), path);
  }
});

test('other endpoints want the key', async () => {
  for (const [path, body] of [['/completions', { prompt: 'x', n_predict: 1 }], ['/v1/chat/completions', {}],
    ['/tokenize', { content: 'x' }]]) {
    const r = await noKey(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(r.status, 401, path);
    assert.equal((await r.json()).error.type, 'authentication_error');
  }
  assert.equal((await noKey('/props')).status, 401);
  const ok = await noKey('/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Api-Key': API_KEY },
    body: JSON.stringify({ prompt: 'x', n_predict: 1 }),
  });
  assert.equal(ok.status, 200);
  assert.equal(typeof (await ok.json()).content, 'string');
});

test('a preflight needs no key', async () => {
  const r = await noKey('/v1/chat/completions', { method: 'OPTIONS', headers: { Origin: 'http://ui.example' } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('access-control-allow-origin'), 'http://ui.example');
  assert.equal(r.headers.get('access-control-allow-credentials'), 'true');
});

test('a request without seed samples with --seed', async () => {
  const auth = { 'Content-Type': 'application/json', Authorization: 'Bearer ' + API_KEY };
  const run = async (extra) => {
    const r = await fetch(BASE + '/completion', {
      method: 'POST', headers: auth,
      body: JSON.stringify({ prompt: 'Once', n_predict: 12, temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, ignore_eos: true, ...extra }),
    });
    assert.equal(r.status, 200);
    return r.json();
  };
  const a = await run({});
  const b = await run({});
  assert.equal(a.generation_settings.seed, Number(process.env.OSCAR_SEED));
  assert.equal(a.content, b.content);
  assert.equal((await run({ seed: Number(process.env.OSCAR_SEED) })).content, a.content);
});
