// oscar-server throughput and latency under concurrency, through the HTTP
// API as clients see it (plain fetch + SSE, no dependencies):
//   - generated tokens/s with 1, 4 and 8 concurrent streams (aggregate),
//     and the 4-stream / 1-stream ratio;
//   - time to first token of a long prompt while 3 other streams decode.
// Usage: node bench.mjs URL [--tokens N] [--prompt-tokens N] [--no-long]
const url = process.argv[2];
if (!url) {
  console.error('usage: node bench.mjs URL [--tokens N] [--prompt-tokens N]');
  process.exit(2);
}
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const N_TOKENS = arg('--tokens', 64);
const LONG_PROMPT = arg('--prompt-tokens', 2000);

// Streams one native /completion; resolves with timing of its tokens.
async function stream(prompt, n_predict, onFirst) {
  const t0 = performance.now();
  const r = await fetch(url + '/completion', {
    method: 'POST',
    body: JSON.stringify({ prompt, n_predict, stream: true, ignore_eos: true, temperature: 0, cache_prompt: false }),
  });
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const dec = new TextDecoder();
  let buf = '';
  let first = 0, last = 0, n = 0, final = null;
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!ev.startsWith('data: ')) continue;
      const j = JSON.parse(ev.slice(6));
      if (j.stop) { final = j; continue; }
      n += j.tokens?.length ?? 1;
      last = performance.now();
      if (!first) { first = last; onFirst?.(); }
    }
  }
  return { t0, first, last, n, final };
}

async function tokenCount(text) {
  const r = await fetch(url + '/tokenize', { method: 'POST', body: JSON.stringify({ content: text, add_special: true }) });
  return (await r.json()).tokens.length;
}

// Aggregate generated tokens/s of `k` concurrent streams, measured over the
// window in which all of them are decoding (first token of the last to
// start .. last token of the first to finish) so prompt time is excluded.
async function throughput(k) {
  const runs = await Promise.all(Array.from({ length: k }, (_, i) => stream(`Stream ${i} says:`, N_TOKENS)));
  const start = Math.max(...runs.map((r) => r.first));
  const end = Math.min(...runs.map((r) => r.last));
  // Tokens generated inside the common window, estimated per stream from its own rate.
  let tokens = 0;
  for (const r of runs) tokens += ((r.n - 1) * (end - start)) / (r.last - r.first);
  const per_stream = runs.map((r) => ((r.n - 1) * 1000) / (r.last - r.first));
  return { k, aggregate: (tokens * 1000) / (end - start), per_stream };
}

const words = [];
for (let i = 0; words.length < LONG_PROMPT * 2; ++i) words.push(['alpha', 'beta', 'gamma', 'delta'][i % 4] + (i % 97));
let long = words.slice(0, LONG_PROMPT).join(' ');
// Trim to about LONG_PROMPT tokens.
let n = await tokenCount(long);
while (n > LONG_PROMPT) {
  long = long.split(' ').slice(0, Math.floor(long.split(' ').length * LONG_PROMPT / n)).join(' ');
  n = await tokenCount(long);
}

await stream('warm up', 4);
const results = [];
for (const k of [1, 4, 8]) results.push(await throughput(k));
const f = (x) => x.toFixed(2);
for (const r of results)
  console.log(`streams ${r.k}: aggregate ${f(r.aggregate)} tok/s, per stream ${r.per_stream.map(f).join(' ')}`);
console.log(`aggregate ratio 4 vs 1: ${f(results[1].aggregate / results[0].aggregate)}x, 8 vs 1: ${f(results[2].aggregate / results[0].aggregate)}x`);

if (process.argv.includes('--no-long')) process.exit(0);
// TTFT of a long prompt alone, then while 3 streams decode.
const alone = await stream(long, 1);
let started = 0;
let release;
const allStarted = new Promise((r) => (release = r));
for (let i = 0; i < 3; ++i)
  stream(`Background ${i}:`, 100000, () => { if (++started === 3) release(); }).catch(() => {});
await allStarted;
const fg = await stream(long, 4);
const ttft = fg.first - fg.t0;
const ttftAlone = alone.first - alone.t0;
console.log(`long prompt ${n} tokens: time to first token alone ${(ttftAlone / 1000).toFixed(2)} s, ` +
  `with 3 streams decoding ${(ttft / 1000).toFixed(2)} s (${f(ttft / ttftAlone)}x)`);
// The background streams end when this process exits (the server cancels them).
process.exit(0);
