// The chat page in a real browser: Debian's chromium driven by playwright-core
// against oscar-server on oscar-tiny (CTest passes the base model, which
// rambles, so a long reply is still streaming when Stop is clicked; the chat
// model, the default, ends most turns within a sentence). Its words are
// never checked: only that replies arrive, stream, stop and persist.
//
//   node tests/webui/browser_test.mjs --server build/bin/oscar-server --out DIR [--model M]
//
// Exit 77 (CTest: skipped) when chromium, playwright-core or the embedded
// bundle is missing. Screenshots go to --out.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const serverBin = args.server || path.join(root, 'build/bin/oscar-server');
const outDir = args.out || path.join(root, 'build/webui-artifacts');
const model = args.model || '';
const chromiumPath = args.chromium || '/usr/bin/chromium';

// Skips after servers started: thrown, so that `finally` stops them.
class SkipError extends Error {}

function skip(why) {
  console.log(`SKIPPED: ${why}`);
  process.exit(77);
}

if (!existsSync(chromiumPath)) skip(`no ${chromiumPath} (apt-get install chromium; scripts/setup-deps.sh does)`);
let chromium;
try {
  ({ chromium } = createRequire(path.join(root, 'webui/package.json'))('playwright-core'));
} catch {
  skip('playwright-core is not installed (cd webui && npm ci)');
}
mkdirSync(outDir, { recursive: true });

// Short tiers so a short chat already has positions in the 2-bit main tier.
const ENV = { LLAMA_KV_FUSED_FA: '1', LLAMA_KV_CLIP_RATIO: '0.96', LLAMA_KV_HP_SINK: '4', LLAMA_KV_HP_RECENT: '8' };
const SERVER_ARGS = [...(model ? ['-m', model] : []), '-c', '2048', '-np', '2', '-fa', 'on', '--cache-type-k', 'q2_0',
  '--cache-type-v', 'q2_0', '--metrics', '-t', '1'];
const SHORT = 12; // max_tokens for replies that must finish
const LONG = 900; // ... and for one that must still be running when stopped

const T = { timeout: 20000 };
const step = (name) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${name}`);
const t0 = Date.now();

async function getJson(url, key) {
  const r = await fetch(url, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
  assert.equal(r.status, 200, `${url}: ${r.status}`);
  return r.json();
}

async function setMaxTokens(page, n) {
  await page.getByTestId('open-settings').click();
  await page.getByTestId('set-max_tokens').fill(String(n));
  await page.getByTestId('settings-save').click();
  await page.getByTestId('settings-dialog').waitFor({ state: 'detached' });
}

// Sends text and waits for the reply to finish; returns the assistant message locator.
async function sendAndWait(page, text) {
  const before = await page.getByTestId('msg-assistant').count();
  await page.getByTestId('prompt').fill(text);
  await page.getByTestId('prompt').press('Enter');
  const reply = page.getByTestId('msg-assistant').nth(before);
  await reply.waitFor(T);
  await page.waitForFunction((i) => {
    const m = document.querySelectorAll('[data-testid="msg-assistant"]')[i];
    return m && m.dataset.streaming === '0';
  }, before, T);
  return reply;
}

async function noHorizontalScroll(page, width) {
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(w <= width, `page is ${w}px wide in a ${width}px window`);
}

async function desktop(browser, server) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(server.url + '/');
  step('desktop: page loaded');
  const props0 = await getJson(server.url + '/props');
  await page.getByTestId('kv-type-k').filter({ hasText: props0.kv.type_k }).waitFor(T);
  await setMaxTokens(page, SHORT);

  // Send; the reply ends with the server's timings shown.
  const first = await sendAndWait(page, 'Hello from the browser test. How do I install a package?');
  await first.getByTestId('msg-speed').waitFor(T);
  assert.ok((await first.getByTestId('msg-body').innerText()).trim().length > 0, 'the reply has text');
  step('desktop: first reply done');

  await kvPanelMatchesServer(page, server);
  await regenerateAndStop(page, first);
  await conversations(page);

  await importExportRenameDelete(page);
  await attachAndKeys(page);

  await page.getByTestId('toggle-theme').click();
  await page.screenshot({ path: path.join(outDir, 'desktop-dark-1280x800.png') });
  await noHorizontalScroll(page, 1280);
  assert.deepEqual(errors, [], 'no script errors');
  await ctx.close();
}

// KV panel against the server's JSON (the page polls every 2 s; nothing
// else runs, so the figures are stable).
async function kvPanelMatchesServer(page, server) {
  await page.waitForTimeout(2300);
  const props = await getJson(server.url + '/props');
  const slots = await getJson(server.url + '/slots');
  const kv = props.kv;
  const text = async (id) => (await page.getByTestId(id).innerText()).trim();
  assert.equal(await text('kv-type-k'), kv.type_k);
  assert.equal(await text('kv-type-v'), kv.type_v);
  assert.equal(await text('kv-bits-main'), `${kv.bits_per_value_k.toFixed(2)}, ${kv.bits_per_value_v.toFixed(2)}`);
  assert.equal(await text('kv-bits'), kv.bits_per_value.toFixed(2));
  assert.equal(await text('kv-tiers'), `${kv.sink} + ${kv.recent} positions`);
  assert.equal(await text('kv-rotations'), kv.rotations);
  const raw = async (loc) => Number(await loc.getAttribute('data-raw'));
  const BYTES = /^\d+(\.\d+)? (B|KiB|MiB|GiB)$/;
  assert.equal(await raw(page.getByTestId('kv-bytes-used')), kv.bytes_used);
  assert.equal(await raw(page.getByTestId('kv-bytes-f16')), kv.bytes_f16_equivalent);
  assert.equal(await raw(page.getByTestId('kv-bytes-allocated')), kv.bytes_allocated);
  assert.match(await text('kv-bytes-used'), BYTES);
  assert.ok(kv.bytes_f16_equivalent > kv.bytes_used, 'q2_0 holds the chat in fewer bytes than f16');
  const rows = page.getByTestId('slot-row');
  assert.equal(await rows.count(), slots.length);
  for (let i = 0; i < slots.length; i++) {
    assert.equal((await rows.nth(i).getByTestId('slot-cached').innerText()).trim(), `${slots[i].n_cached} / ${slots[i].n_ctx}`);
    assert.equal(await raw(rows.nth(i).getByTestId('slot-bytes')), slots[i].kv.bytes_used);
  }
  // This conversation's context: usage of its last reply, within one token of
  // what its slot holds (the last sampled token is not fed back).
  const m = /^(\d+) \/ (\d+) tokens$/.exec(await text('kv-context'));
  assert.ok(m, 'context figure');
  assert.equal(Number(m[2]), props.default_generation_settings.n_ctx);
  assert.ok(slots.some((s) => Math.abs(s.n_cached - Number(m[1])) <= 1), `context ${m[1]} vs slots ${slots.map((s) => s.n_cached)}`);
  assert.match(await text('kv-gen-speed'), /t\/s$/);
  step('desktop: KV panel equals /props and /slots');

}

// Waits until the streaming reply has grown twice, clicks Stop; true when
// the reply ends marked "stopped" (false: it finished before the click).
async function watchAndStop(page) {
  const streaming = page.locator('[data-testid="msg-assistant"][data-streaming="1"]');
  await streaming.waitFor({ timeout: 5000 }).catch(() => {}); // a reply of one token may be over already
  const lengths = [];
  for (let i = 0; i < 100 && new Set(lengths.filter((n) => n > 0)).size < 2; i++) {
    lengths.push(await page.evaluate(() => document.querySelector('[data-testid="msg-assistant"][data-streaming="1"]')?.innerText.length ?? -1));
    await page.waitForTimeout(50);
  }
  const grew = new Set(lengths.filter((n) => n > 0)).size >= 2;
  const stop = page.getByTestId('stop');
  if (await stop.count()) await stop.click().catch(() => {});
  await streaming.waitFor({ state: 'detached', ...T });
  await page.getByTestId('send').waitFor(T);
  const wasStopped = /stopped/.test(await page.getByTestId('msg-assistant').last().innerText());
  if (wasStopped) assert.ok(grew, `the reply grew while streaming: ${lengths}`);
  return wasStopped;
}

async function regenerateAndStop(page, first) {
  // Regenerate: a second version of the reply, with a branch switcher.
  await first.getByTestId('regenerate').click();
  await page.waitForFunction(() => {
    const m = document.querySelector('[data-testid="msg-assistant"]');
    return m && m.dataset.streaming === '0' && m.querySelector('[data-testid="branch-nav"]');
  }, null, T);
  assert.match(await page.getByTestId('branch-nav').first().innerText(), /2\s*\/\s*2/);
  step('desktop: regenerated');

  // A long reply: watch it stream in, then stop it. The model may end its
  // turn on its own first (rarely): then regenerate and try again.
  await setMaxTokens(page, LONG);
  await page.getByTestId('prompt').fill('Tell me everything about the Debian package manager.');
  await page.getByTestId('prompt').press('Enter');
  let stopped = false;
  for (let attempt = 0; attempt < 3 && !stopped; attempt++) {
    if (attempt > 0) await page.getByTestId('msg-assistant').last().getByTestId('regenerate').click();
    stopped = await watchAndStop(page);
  }
  assert.ok(stopped, 'a long reply was still streaming when Stop was clicked');
  step('desktop: streamed and stopped');
  await page.screenshot({ path: path.join(outDir, 'desktop-1280x800.png') });

}

async function conversations(page) {
  // A second conversation, then switch back and forth.
  await setMaxTokens(page, SHORT);
  await page.getByTestId('new-chat').click();
  // The marker is what the search looks for below: the model's replies are
  // sampled (unseeded) and may contain any common word, such as "kernel".
  await sendAndWait(page, 'Second conversation: what is a kernel module? zqx7');
  await page.getByTestId('conversation').nth(1).waitFor(T);
  assert.equal(await page.getByTestId('conversation').count(), 2);
  await page.getByTestId('conversation').filter({ hasText: 'Hello from the browser test' }).locator('.conv-title').click();
  await page.getByTestId('msg-user').filter({ hasText: 'Hello from the browser test' }).waitFor(T);
  assert.equal(await page.getByTestId('msg-user').filter({ hasText: 'kernel module' }).count(), 0);
  step('desktop: switched conversations');

  // Reload: both conversations are still there (IndexedDB) and open.
  await page.reload();
  await page.getByTestId('conversation').nth(1).waitFor(T);
  await page.getByTestId('conversation').filter({ hasText: 'Second conversation' }).locator('.conv-title').click();
  await page.getByTestId('msg-user').filter({ hasText: 'kernel module' }).waitFor(T);
  await page.getByTestId('msg-assistant').first().getByTestId('msg-speed').waitFor(T);
  await page.getByTestId('search').fill('zqx7');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="conversation"]').length === 1, null, T);
  await page.getByTestId('search').fill('');
  step('desktop: reloaded, conversations kept, search works');

  // Edit the user message: a new branch with its own reply.
  await page.getByTestId('msg-user').first().getByTestId('edit').click();
  await page.getByTestId('edit-input').fill('Second conversation, edited: what is a device driver?');
  await page.getByTestId('edit-save').click();
  await page.getByTestId('msg-user').filter({ hasText: 'edited' }).waitFor(T);
  await page.waitForFunction(() => document.querySelector('[data-testid="msg-assistant"]')?.dataset.streaming === '0', null, T);
  assert.match(await page.getByTestId('msg-user').first().getByTestId('branch-nav').innerText(), /2\s*\/\s*2/);
  step('desktop: edited and branched');
}

// A conversation written by hand (no model words involved): Markdown with
// code, a table and HTML that must not run, reasoning, a tool call and its result.
const FIXTURE = {
  format: 'oscar-webui-conversations',
  version: 1,
  conversations: [{
    id: 'fixture-1', title: 'Imported fixture', createdAt: 1, updatedAt: 1, system: '', contextUsed: null, leaf: 'm4',
    messages: {
      m1: { id: 'm1', parent: null, role: 'user', content: 'What is the weather, in code?', createdAt: 1 },
      m2: { id: 'm2', parent: 'm1', role: 'assistant', content: '', reasoning: 'The user wants the weather.', createdAt: 2,
        toolCalls: [{ id: 'c0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      m3: { id: 'm3', parent: 'm2', role: 'tool', content: '{"celsius": 21}', toolCallId: 'c0', createdAt: 3 },
      m4: { id: 'm4', parent: 'm3', role: 'assistant', createdAt: 4, content:
        '## Result\n\n```python\ndef celsius():\n    return 21\n```\n\n| city | °C |\n|---|---|\n| Paris | 21 |\n\n' +
        '<img src="x" onerror="window.__xss = 1"><script>window.__xss = 2</script>' },
    },
  }],
};

async function importExportRenameDelete(page) {
  const convs = page.getByTestId('conversation');
  const n0 = await convs.count();
  await page.getByTestId('import-file').setInputFiles({ name: 'fixture.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(FIXTURE)) });
  await convs.filter({ hasText: 'Imported fixture' }).locator('.conv-title').click();
  const md = page.getByTestId('msg-assistant').last();
  await md.locator('.code-block .hljs-keyword').first().waitFor(T);
  assert.equal(await md.locator('table td').first().innerText(), 'Paris');
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'HTML in a reply does not run');
  assert.equal(await md.locator('img[onerror], script').count(), 0);
  await md.locator('.copy-code').click();
  await md.locator('.copy-code', { hasText: 'Copied' }).waitFor(T);
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'def celsius():\n    return 21');
  const call = page.getByTestId('tool-call');
  assert.match(await call.innerText(), /get_weather[\s\S]*"city": "Paris"/);
  assert.equal(await page.getByTestId('reasoning').evaluate((d) => d.open), false, 'finished reasoning is folded');
  assert.match(await page.getByTestId('reasoning').innerText(), /Thought/);
  assert.match(await page.getByTestId('msg-tool').innerText(), /"celsius": 21/);
  step('desktop: imported a conversation: Markdown, code, copy, sanitised HTML, tool call, reasoning');

  // Export everything, delete the fixture, import the export: it is back.
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export').click()]);
  const exported = JSON.parse(await (await import('node:fs/promises')).readFile(await download.path(), 'utf8'));
  assert.equal(exported.conversations.length, n0 + 1);
  page.once('dialog', (d) => d.accept());
  await convs.filter({ hasText: 'Imported fixture' }).getByTestId('delete').click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="conversation"]').length === n, n0, T);
  await page.getByTestId('import-file').setInputFiles({ name: 'export.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(exported)) });
  await convs.filter({ hasText: 'Imported fixture' }).waitFor(T);
  page.once('dialog', (d) => d.accept('Renamed fixture'));
  await convs.filter({ hasText: 'Imported fixture' }).getByTestId('rename').click();
  await convs.filter({ hasText: 'Renamed fixture' }).waitFor(T);
  step('desktop: export, delete, import back, rename');
}

async function attachAndKeys(page) {
  await page.getByTestId('new-chat').click();
  // Shift+Enter is a new line, not a send.
  const prompt = page.getByTestId('prompt');
  await prompt.fill('');
  await prompt.type('first line');
  await prompt.press('Shift+Enter');
  await prompt.type('second line');
  assert.equal(await prompt.inputValue(), 'first line\nsecond line');
  assert.equal(await page.getByTestId('msg-user').count(), 0);
  // The settings start from the server's defaults.
  const props = await (await fetch(page.url().replace(/\/$/, '') + '/props')).json();
  await page.getByTestId('open-settings').click();
  const temp = Number(await page.getByTestId('set-temperature').inputValue());
  assert.ok(Math.abs(temp - props.default_generation_settings.params.temperature) < 1e-5, `temperature ${temp}`);
  await page.keyboard.press('Escape');
  await page.locator('.overlay').click({ position: { x: 5, y: 5 } });
  // An attached text file travels with the message (its chip stays on it).
  await page.getByTestId('attach-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('apt install foo') });
  await prompt.fill('Summarise the attached notes.');
  await prompt.press('Enter');
  await page.getByTestId('msg-user').locator('.chip', { hasText: 'notes.txt' }).waitFor(T);
  await page.waitForFunction(() => document.querySelector('[data-testid="msg-assistant"]')?.dataset.streaming === '0', null, T);
  step('desktop: Shift+Enter, settings defaults, attached file');
}

async function phone(browser, server) {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const page = await ctx.newPage();
  await page.goto(server.url + '/');
  await setMaxTokens(page, SHORT);
  const reply = await sendAndWait(page, 'Hello from a phone-sized screen.');
  await reply.getByTestId('msg-speed').waitFor(T);
  await noHorizontalScroll(page, 390);
  await page.screenshot({ path: path.join(outDir, 'phone-390x844.png') });
  await page.getByTestId('toggle-kv').click();
  await page.getByTestId('kv-type-k').waitFor(T);
  const props = await getJson(server.url + '/props');
  assert.equal((await page.getByTestId('kv-type-k').innerText()).trim(), props.kv.type_k);
  await page.screenshot({ path: path.join(outDir, 'phone-kv-390x844.png') });
  step('phone: chat and KV panel');
  await ctx.close();
}

async function withKey(browser, server, key) {
  // The page's files need no key; the API does.
  assert.equal((await fetch(server.url + '/')).status, 200);
  assert.equal((await fetch(server.url + '/props')).status, 401);
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  await page.goto(server.url + '/');
  await page.getByTestId('key-dialog').waitFor(T);
  await page.screenshot({ path: path.join(outDir, 'api-key-1280x800.png') });
  await page.getByTestId('key-input').fill(key);
  await page.getByTestId('key-save').click();
  await page.getByTestId('key-dialog').waitFor({ state: 'detached', ...T });
  await page.getByTestId('kv-type-k').waitFor(T);
  await setMaxTokens(page, SHORT);
  const reply = await sendAndWait(page, 'Hello with a key.');
  await reply.getByTestId('msg-speed').waitFor(T);
  step('api key: asked for, sent, reply received');
  await ctx.close();
}

let browser;
const servers = [];
try {
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const server = await startServer(serverBin, SERVER_ARGS, ENV);
  servers.push(server);
  const index = await (await fetch(server.url + '/')).text();
  if (index.includes('web UI was not built')) {
    // The build meant to embed it (node_modules present) but the Vite build failed: that is a failure.
    if (args['expect-webui'] === '1') throw new Error('the build should have embedded the web UI; see the build log (vite)');
    throw new SkipError('this oscar-server has no web UI built in (node/npm missing at build time)');
  }
  step('server up');
  await desktop(browser, server);
  await phone(browser, server);
  const key = 'browser-test-key';
  const keyed = await startServer(serverBin, [...SERVER_ARGS, '--api-key', key], ENV);
  servers.push(keyed);
  await withKey(browser, keyed, key);
  console.log(`PASSED in ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${outDir}`);
} catch (e) {
  if (e instanceof SkipError) {
    console.log(`SKIPPED: ${e.message}`);
    process.exitCode = 77;
  } else {
    console.error(e);
    // What the pages showed when it failed, for the CI log's reader.
    let n = 0;
    for (const ctx of browser ? browser.contexts() : [])
      for (const p of ctx.pages())
        await p.screenshot({ path: path.join(outDir, `failure-${++n}.png`) }).catch(() => {});
    if (n) console.error(`failure screenshots: ${outDir}/failure-*.png`);
    for (const s of servers) console.error('--- server log ---\n' + s.log().slice(-3000));
    process.exitCode = 1;
  }
} finally {
  if (browser) await browser.close();
  for (const s of servers) await s.stop();
}
