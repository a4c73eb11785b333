// Replicas behind HAProxy (deploy/oscar-cluster.sh): multi-turn
// conversations keep their replica (prefix cache hits), a replica killed
// with SIGKILL costs no non-streamed request, a restarted one rejoins, and
// one stopped with SIGTERM finishes what it was doing.
//
// Driven by tests/deploy/cluster_failover.sh, which starts the cluster and
// passes: OSCAR_URL (HAProxy), OSCAR_REPLICA_PORTS (comma list),
// OSCAR_CLUSTER_DIR (oscar-cluster.sh's pid files) and OSCAR_RESTART_CMD.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import OpenAI from 'openai';

const LB = process.env.OSCAR_URL;
const PORTS = process.env.OSCAR_REPLICA_PORTS.split(',').map(Number);
const DIR = process.env.OSCAR_CLUSTER_DIR;          // pid files and logs
const RESTART = process.env.OSCAR_RESTART_CMD;      // restarts replica 2 (shell)
const N_CONV = Number(process.env.OSCAR_CONVERSATIONS || 60);
const TURNS = 4;
const CONCURRENCY = 8;

const oa = new OpenAI({ baseURL: LB + '/v1', apiKey: 'none', maxRetries: 0, timeout: 120_000 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => xs.length ? xs[Math.min(xs.length - 1, Math.ceil(p / 100 * xs.length) - 1)] : NaN;

const stats = { requests: 0, failures: 0, streamCuts: 0, retries: 0, followUps: 0, hits: 0, lat: [] };
const failures = [];

async function replicaRequests(port) {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`);
  const m = /^oscar:generation_requests_total (\d+)/m.exec(await r.text());
  return m ? Number(m[1]) : 0;
}

// One turn; streamed turns that are cut (their replica died) are retried
// once by the client, as the README tells clients to.
async function turn(conv, t, messages) {
  const stream = (conv + t) % 4 === 3;
  // Half the conversations name themselves (OpenAI's `user`), the others are
  // routed by their opening messages alone.
  const body = { model: 'x', messages, max_tokens: 6, temperature: 0, ...(conv % 2 ? { user: `conv-${conv}` } : {}) };
  for (let attempt = 0; attempt < 2; ++attempt) {
    const t0 = performance.now();
    stats.requests++;
    try {
      if (!stream) {
        const r = await oa.chat.completions.create(body);
        stats.lat.push(performance.now() - t0);
        return { text: r.choices[0].message.content, cached: r.usage?.prompt_tokens_details?.cached_tokens ?? 0 };
      }
      let text = '', finished = false, cached = 0;
      for await (const c of await oa.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })) {
        text += c.choices[0]?.delta?.content ?? '';
        if (c.choices[0]?.finish_reason) finished = true;
        if (c.usage) cached = c.usage.prompt_tokens_details?.cached_tokens ?? 0;
      }
      if (!finished) throw new Error('stream ended without a finish_reason');
      stats.lat.push(performance.now() - t0);
      return { text, cached };
    } catch (e) {
      if (stream && attempt === 0) { stats.streamCuts++; stats.retries++; continue; }
      stats.failures++;
      failures.push(`conversation ${conv} turn ${t} (${stream ? 'stream' : 'plain'}): ${e.message}`);
      return null;
    }
  }
}

async function conversation(conv) {
  const messages = [
    { role: 'system', content: `You are assistant number ${conv}. ` + 'Answer briefly. '.repeat(8) },
    { role: 'user', content: `Question ${conv}: how do I configure the network?` },
  ];
  for (let t = 0; t < TURNS; ++t) {
    const r = await turn(conv, t, messages);
    if (!r) return;
    if (t > 0) { stats.followUps++; if (r.cached > 0) stats.hits++; }
    messages.push({ role: 'assistant', content: r.text }, { role: 'user', content: `And then, step ${t + 2}?` });
  }
}

const pidOf = (i) => Number(fs.readFileSync(`${DIR}/replica-${i}.pid`, 'utf8'));

// Conversations from the second half on wait until the restarted replica
// has rejoined, so there is traffic left for it and for the SIGTERM below
// however fast the machine runs the first half.
let releaseSecondHalf;
const secondHalf = new Promise((r) => { releaseSecondHalf = r; });

async function chaos(progress) {
  try {
    // Kill replica 2 once a quarter of the conversations are under way.
    while (progress() < N_CONV / 4) await sleep(50);
    process.kill(pidOf(2), 'SIGKILL');
    console.log(`killed replica 2 (SIGKILL) after ${progress()} conversations`);
    // The balancer must stop sending to it within its check interval.
    await sleep(3000);
    const before = await replicaRequests(PORTS[0]) + await replicaRequests(PORTS[2]);
    const probe = (key) => oa.chat.completions.create(
      { model: 'x', messages: [{ role: 'user', content: 'probe' }], max_tokens: 1 }, { headers: { 'X-Session-Id': key } });
    for (let k = 0; k < 6; ++k) await probe(`while-down-${k}`);
    const after = await replicaRequests(PORTS[0]) + await replicaRequests(PORTS[2]);
    assert.ok(after >= before + 6, 'the surviving replicas took the traffic');
    // Restart it; it must rejoin and be sent work again: keys that hash to
    // it go back to it once HAProxy sees two passing checks (rise 2, inter 1s).
    execFileSync('bash', ['-c', RESTART]);
    const t0 = Date.now();
    for (;;) {
      try { if ((await fetch(`http://127.0.0.1:${PORTS[1]}/health`)).status === 200) break; } catch { /* starting */ }
      assert.ok(Date.now() - t0 < 60_000, 'the restarted replica became healthy');
      await sleep(200);
    }
    console.log('replica 2 restarted and healthy');
    let r2 = 0;
    for (let k = 0; k < 200 && r2 === 0; ++k) {
      await probe(`after-restart-${k}`);
      r2 = await replicaRequests(PORTS[1]);
      if (r2 === 0) await sleep(100);
    }
    console.log(`replica 2 served ${r2} generation requests since its restart`);
    rejoined = r2 > 0;
  } finally {
    releaseSecondHalf();
  }
  // Stop replica 3 with SIGTERM while conversations are running on it: it
  // must drain, not cut.
  while (progress() < (3 * N_CONV) / 4) await sleep(20);
  cutsAtTerm = stats.streamCuts;
  process.kill(pidOf(3), 'SIGTERM');
  console.log('sent SIGTERM to replica 3');
}

let rejoined = false;
let cutsAtTerm = -1;
let started = 0;
async function worker() {
  while (started < N_CONV) {
    const conv = started++;
    if (conv >= N_CONV / 2) await secondHalf;
    await conversation(conv);
  }
}

const t0 = performance.now();
await Promise.all([...Array(CONCURRENCY)].map(worker).concat([chaos(() => started)]));
const secs = (performance.now() - t0) / 1000;
const lat = stats.lat.sort((a, b) => a - b);
const hitRate = stats.followUps ? stats.hits / stats.followUps : 0;
console.log(`requests ${stats.requests}, failures ${stats.failures}, client retries of cut streams ${stats.retries}, ` +
  `affinity hit rate ${(100 * hitRate).toFixed(1)}% (${stats.hits}/${stats.followUps} follow-up turns with cached_tokens > 0), ` +
  `latency p50 ${pct(lat, 50).toFixed(0)} ms p90 ${pct(lat, 90).toFixed(0)} ms p99 ${pct(lat, 99).toFixed(0)} ms, ${secs.toFixed(1)} s`);
for (const f of failures) console.log('FAILED: ' + f);
assert.equal(stats.failures, 0, 'no request failed');
assert.ok(hitRate >= 0.9, `follow-up turns reuse their prefix (${(100 * hitRate).toFixed(1)}% < 90%)`);
assert.ok(rejoined, 'the restarted replica was sent work again');
assert.ok(cutsAtTerm >= 0, 'SIGTERM was sent while conversations were running');
assert.equal(stats.streamCuts, cutsAtTerm, 'no stream was cut after SIGTERM (the replica drained)');
console.log('cluster failover: ok');
