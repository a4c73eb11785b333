// Bounded load test: N requests, C at a time, mixed streaming and not;
// fails on any error and prints latency percentiles.
import assert from 'node:assert/strict';
import { client, percentile, waitIdle } from './common.mjs';

const N = Number(process.env.OSCAR_LOAD_N || 300);
const C = Number(process.env.OSCAR_LOAD_C || 8);
const oa = client();

let next = 0;
let failures = 0;
const latencies = [];
const ttfts = [];

async function one(i) {
  const t0 = performance.now();
  const max_tokens = 4 + (i % 13);
  if (i % 2 === 0) {
    const r = await oa.chat.completions.create({
      model: 'x', messages: [{ role: 'user', content: `request ${i} ` + 'x'.repeat(i % 40) }], max_tokens,
      ignore_eos: true,
    });
    assert.equal(r.usage.completion_tokens, max_tokens);
  } else {
    let first = 0;
    let done = false;
    for await (const c of await oa.completions.create({
      model: 'x', prompt: `prompt ${i}`, max_tokens, stream: true, ignore_eos: true,
    })) {
      if (!first) first = performance.now();
      if (c.choices[0]?.finish_reason) done = true;
    }
    assert.ok(done, 'stream ended without finish_reason');
    ttfts.push(first - t0);
  }
  latencies.push(performance.now() - t0);
}

async function worker() {
  while (next < N) {
    const i = next++;
    try {
      await one(i);
    } catch (e) {
      failures++;
      console.error(`request ${i} failed:`, e?.message ?? e);
    }
  }
}

const t0 = performance.now();
await Promise.all(Array.from({ length: C }, worker));
const wall = (performance.now() - t0) / 1000;
latencies.sort((a, b) => a - b);
ttfts.sort((a, b) => a - b);
const f = (x) => x.toFixed(1);
console.log(`load: ${N} requests, ${C} concurrent, ${failures} failures, ${wall.toFixed(2)} s (${(N / wall).toFixed(1)} req/s)`);
console.log(`latency ms: p50 ${f(percentile(latencies, 50))} p90 ${f(percentile(latencies, 90))} ` +
  `p99 ${f(percentile(latencies, 99))} max ${f(latencies.at(-1))}`);
console.log(`stream first-chunk ms: p50 ${f(percentile(ttfts, 50))} p99 ${f(percentile(ttfts, 99))}`);
await waitIdle(2000);
process.exit(failures === 0 && latencies.length === N ? 0 : 1);
