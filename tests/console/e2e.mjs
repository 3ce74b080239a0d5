// Drives the operator console (http://HOST:PORT/console) in headless Chromium against a
// real `orchestrata up`, spawned by tests/console_e2e.rs.
//
// Env: CONSOLE_URL (http://127.0.0.1:PORT), CONSOLE_TOKEN (read_write),
// CONSOLE_AGENT_TOKEN (read_write, acting as the roster Volks the sender speaks for),
// CONSOLE_RO_TOKEN (read_only), CONSOLE_SHOTS (directory for screenshots),
// CHROMIUM (default /usr/bin/chromium).
//
// Talks to the Rust test over stdio: prints `@@restart` when the server must be killed
// and restarted, then reads one line from stdin: the message_id of a packet the test
// sent (from its own Rust client) right after the restart. Prints `@@step NAME` as it
// goes and exits non-zero with the reason on the first failed expectation.

import { chromium } from 'playwright-core';
import { createInterface } from 'node:readline';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL_BASE = process.env.CONSOLE_URL;
const TOKEN = process.env.CONSOLE_TOKEN;
const RO_TOKEN = process.env.CONSOLE_RO_TOKEN;
// The sender speaks for roster Volks (U:Cx, U:Vz): a principal granted them, not the
// operator's token (which acts as U:GW only).
const AGENT_TOKEN = process.env.CONSOLE_AGENT_TOKEN || TOKEN;
const SHOTS = process.env.CONSOLE_SHOTS;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
for (const [k, v] of Object.entries({ CONSOLE_URL: URL_BASE, CONSOLE_TOKEN: TOKEN, CONSOLE_RO_TOKEN: RO_TOKEN, CONSOLE_SHOTS: SHOTS })) {
  if (!v) { console.error(`e2e.mjs: ${k} is not set`); process.exit(2); }
}
mkdirSync(SHOTS, { recursive: true });

const stdin = createInterface({ input: process.stdin });
const lines = [];
let waiter = null;
stdin.on('line', (l) => { if (waiter) { const w = waiter; waiter = null; w(l); } else lines.push(l); });
const readLine = () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => { waiter = r; }));

function expect(cond, what) {
  if (!cond) throw new Error(`expectation failed: ${what}`);
}
const step = (name) => console.log(`@@step ${name}`);
const shot = (page, name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });

/** Another client: a plain WebSocket in its own browser context (not the console). */
async function otherClient(browser) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${URL_BASE}/health`);
  return {
    async call(method, params) {
      return page.evaluate(async ({ url, token, method, params }) => {
        const ws = new WebSocket(url);
        await new Promise((ok, no) => { ws.onopen = ok; ws.onerror = () => no(new Error('ws error')); });
        let id = 0;
        const call = (m, p) => new Promise((ok) => {
          const my = ++id;
          ws.addEventListener('message', function on(e) {
            const msg = JSON.parse(e.data);
            if (msg.id === my) { ws.removeEventListener('message', on); ok(msg); }
          });
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: my, method: m, params: p }));
        });
        const auth = await call('auth.authenticate', { strategy: 'static_token', token, client_metadata: { client_name: 'e2e-sender' } });
        if (auth.error) { ws.close(); return auth; }
        const answer = await call(method, params);
        ws.close();
        return answer;
      }, { url: URL_BASE.replace(/^http/, 'ws') + '/', token: AGENT_TOKEN, method, params });
    },
    close: () => context.close(),
  };
}

async function send(sender, params) {
  const r = await sender.call('cxp.send', params);
  expect(r.result && r.result.message_id, `cxp.send answered a message_id (got ${JSON.stringify(r)})`);
  return r.result;
}

async function rowCounts(page) {
  return page.$$eval('#traffic-rows tr', (trs) => {
    const counts = {};
    for (const tr of trs) counts[tr.dataset.messageId] = (counts[tr.dataset.messageId] || 0) + 1;
    return counts;
  });
}

async function signIn(page, token) {
  await page.goto(`${URL_BASE}/console`);
  await page.fill('#token', token);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('body[data-ready=true]', { timeout: 15000 });
}

async function tab(page, name) {
  await page.click(`#tabs button[data-tab=${name}]`);
  await page.waitForSelector(`#panel-${name}:not([hidden])`);
}

async function main() {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  try {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20000);
    current = page;
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));

    step('sign-in');
    await page.goto(`${URL_BASE}/console`);
    await shot(page, 'signin');
    // Reported, not asserted (speed is measured, never a test verdict): page load on loopback.
    const load = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const bytes = performance.getEntriesByType('resource').reduce((n, r) => n + (r.decodedBodySize || 0), nav.decodedBodySize || 0);
      return { ms: Math.round(nav.loadEventEnd - nav.startTime), bytes };
    });
    console.log(`@@metric console_load ${JSON.stringify(load)}`);
    // A wrong token is refused with a visible reason and nothing stored.
    await page.fill('#token', 'not-the-token');
    await page.click('#signin-form button[type=submit]');
    await page.waitForFunction(() => document.getElementById('signin-error').textContent.includes('-32001'));
    expect(await page.evaluate(() => sessionStorage.length) === 0, 'a refused token is not kept');
    await page.fill('#token', TOKEN);
    await page.click('#signin-form button[type=submit]');
    await page.waitForSelector('body[data-ready=true]', { timeout: 15000 });
    expect(!page.url().includes(TOKEN), 'the token is never in the URL');
    const stored = await page.evaluate(() => Object.values(sessionStorage));
    expect(stored.includes(TOKEN), 'the token is kept in sessionStorage');
    expect(await page.textContent('#scope') === 'read_write', 'scope pill shows read_write');

    step('traffic');
    const sender = await otherClient(browser);
    const a = await send(sender, { from: 'U:Cx', target: 'U:Ox', subject: 'build_feature', payload: { feature: 'login' }, priority: 7 });
    const b = await send(sender, { from: 'U:Vz', target: 'U:Qa', subject: 'review_code', payload: { pr: 42 }, priority: 3 });
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${a.message_id}"]`, { timeout: 20000 });
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${b.message_id}"]`, { timeout: 20000 });
    const cells = await page.$$eval(`#traffic-rows tr[data-message-id="${a.message_id}"] td`, (tds) => tds.map((t) => t.textContent));
    expect(cells.includes('U:Cx') && cells.includes('U:Ox') && cells.includes('build_feature'), `row shows from/to/subject (${cells})`);

    // A burst: the events/s chart must register it.
    for (let i = 0; i < 12; i += 1) {
      await send(sender, { from: 'U:Cx', target: 'U:Ox', subject: `burst_${i % 3}`, payload: { i }, priority: 5 });
    }
    await page.waitForFunction(() => Number(document.getElementById('rate-chart').dataset.max) > 0, null, { timeout: 5000 });
    const opened = await sender.call('session.open', { portfolio: 'orchestrata', goals: ['ship the operator console', 'resume without duplicates'] });
    expect(opened.result && opened.result.session_id, `session.open answered a session (${JSON.stringify(opened)})`);

    step('filter');
    await page.fill('#f-subject', 'review_*');
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${a.message_id}"]`, { state: 'detached' });
    expect(await page.$(`#traffic-rows tr[data-message-id="${b.message_id}"]`), 'subject filter keeps review_code');
    await page.fill('#f-subject', '');
    await page.fill('#f-volk', 'U:Cx');
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${b.message_id}"]`, { state: 'detached' });
    expect(await page.$(`#traffic-rows tr[data-message-id="${a.message_id}"]`), 'Volk filter keeps U:Cx packet');
    await page.fill('#f-volk', '');
    await page.fill('#f-thread', b.thread_id);
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${a.message_id}"]`, { state: 'detached' });
    await page.fill('#f-thread', '');
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${a.message_id}"]`);

    step('thread');
    await page.click(`#traffic-rows tr[data-message-id="${a.message_id}"]`);
    await page.waitForSelector(`#thread-view .packet[data-message-id="${a.message_id}"]`, { timeout: 20000 });
    const thread = await page.textContent('#thread-view');
    expect(thread.includes(a.thread_id) && thread.includes('build_feature'), 'thread view shows the thread and packet');
    await page.waitForFunction(() => document.querySelectorAll('#thread-view .transition').length > 0, null, { timeout: 20000 });
    await shot(page, 'traffic');

    step('dry-run');
    await tab(page, 'governance');
    await page.fill('#d-volk', 'U:Cx');
    await page.fill('#d-action', 'send');
    await page.fill('#d-resource', 'U:Ox');
    await page.click('#dryrun-form button[type=submit]');
    await page.waitForSelector('#dryrun-result .dryrun-outcome, #dryrun-result .error', { timeout: 20000 });
    const err = await page.$('#dryrun-result .error');
    expect(!err, `dry run answered (${err ? await err.textContent() : ''})`);
    const outcome = await page.textContent('#dryrun-result .dryrun-outcome');
    expect(['allow', 'deny', 'escalate'].includes(outcome), `dry run outcome is a decision (${outcome})`);
    const trace = await page.$$eval('#dryrun-result .dryrun-trace li', (lis) => lis.length);
    expect(trace > 0, 'dry run shows the Prolog trace');
    await page.waitForFunction(() => document.querySelectorAll('#decisions tr').length > 0, null, { timeout: 20000 });
    await shot(page, 'governance');

    step('volks');
    await tab(page, 'volks');
    await page.waitForSelector('#volk-tree li[data-alias="U:Ox"] li[data-alias="U:Vz"]', { timeout: 20000 });
    const lifecycle = await page.$$eval('#lifecycle-events li', (lis) => lis.map((li) => li.textContent));
    expect(lifecycle.some((t) => t.includes('registered: U:Vz under U:Ox')), `lifecycle shows the roster's registrations (${lifecycle.length} events)`);
    await shot(page, 'volks');

    step('workflows');
    await tab(page, 'sessions');
    await page.waitForSelector(`#sessions tr[data-session="${opened.result.session_id}"]`, { timeout: 20000 });
    await page.click('#workflow-start button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#workflows button.control[data-method="workflow.pause"]')
      || document.getElementById('workflows-error').textContent, null, { timeout: 20000 });
    const wfError = await page.textContent('#workflows-error');
    expect(!wfError, `workflow started from the console (${wfError})`);
    await page.click('#workflows button.control[data-method="workflow.pause"]');
    await page.waitForSelector('#workflows button.control[data-method="workflow.resume"]', { timeout: 20000 });
    expect(await page.textContent('#workflows td.status') === 'paused', 'the run shows paused');
    await page.click('#workflows button.control[data-method="workflow.resume"]');
    await page.waitForSelector('#workflows button.control[data-method="workflow.pause"]', { timeout: 20000 });
    expect(await page.textContent('#workflows td.status') === 'running', 'the run shows running again');
    await page.click('#workflows button.control[data-method="workflow.pause"]');
    await page.waitForSelector('#workflows button.control[data-method="workflow.resume"]', { timeout: 20000 });
    await shot(page, 'sessions');

    step('history');
    await tab(page, 'history');
    await page.selectOption('#h-topic', 'cxp.traffic');
    await page.waitForFunction(() => Number(document.getElementById('scrub').max) > 0, null, { timeout: 20000 });
    const [min, max] = await page.$eval('#scrub', (s) => [Number(s.min), Number(s.max)]);
    const scrubTo = async (v) => {
      await page.$eval('#scrub', (s, v) => { s.value = String(v); s.dispatchEvent(new Event('input', { bubbles: true })); }, v);
      await page.waitForFunction((v) => document.getElementById('scrub-pos').dataset.position === String(v), v, { timeout: 20000 });
      return page.$eval('#history-events tr', (tr) => Number(tr.dataset.sequence));
    };
    expect(await scrubTo(min) === min, 'scrubbed back to the oldest event');
    expect(!(await page.$eval('#live', (b) => b.classList.contains('active'))), 'scrubbing leaves live mode');
    const mid = Math.floor((min + max) / 2);
    expect(await scrubTo(mid) === mid, 'scrubbed to the middle');
    await shot(page, 'history');
    expect(await scrubTo(max) === max, 'scrubbed forward to the newest event');
    await page.click('#live');
    await page.waitForFunction(() => document.getElementById('scrub-pos').textContent.includes('(live)'));

    step('gateway');
    await tab(page, 'gateway');
    await page.waitForFunction(() => document.querySelectorAll('#gw-clients tr').length > 0, null, { timeout: 20000 });
    await page.waitForSelector('#gw-metrics dd', { timeout: 20000 });
    await shot(page, 'gateway');

    step('restart');
    await tab(page, 'traffic');
    const before = await rowCounts(page);
    console.log('@@restart');
    const afterRestart = (await readLine()).trim();
    await page.waitForFunction(() => window.orchestrataConsole.gw.stats.reconnects >= 1, null, { timeout: 20000 });
    await page.waitForSelector('#conn[data-state=open]', { timeout: 20000 });
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${afterRestart}"]`, { timeout: 15000 });
    const c = await send(sender, { from: 'U:Cx', target: 'U:Ox', subject: 'after_restart', payload: { n: 3 }, priority: 5 });
    await page.waitForSelector(`#traffic-rows tr[data-message-id="${c.message_id}"]`, { timeout: 20000 });
    const after = await rowCounts(page);
    for (const [id, n] of Object.entries(after)) expect(n === 1, `packet ${id} shown once after resume (shown ${n} times)`);
    for (const id of Object.keys(before)) expect(after[id] === 1, `packet ${id} from before the restart still shown once`);
    // Besides the two packets sent, the restart closes the workflow run it interrupted
    // and terminates that run's junior, whose parent is told by a `volk_terminated`.
    const added = Object.keys(after).filter((id) => !(id in before));
    expect(added.includes(afterRestart) && added.includes(c.message_id), `both new packets were added (${added})`);
    const extra = await page.$$eval('#traffic-rows tr', (trs, ids) => trs
      .filter((tr) => ids.includes(tr.dataset.messageId)).map((tr) => tr.textContent),
      added.filter((id) => id !== afterRestart && id !== c.message_id));
    expect(extra.length <= 1 && extra.every((t) => t.includes('volk_terminated')), `nothing else was added but the interrupted junior's notice (${extra})`);
    await shot(page, 'resumed');
    await sender.close();

    step('read-only');
    const ro = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    ro.setDefaultTimeout(20000);
    current = ro;
    await signIn(ro, RO_TOKEN);
    expect(await ro.textContent('#scope') === 'read_only', 'scope pill shows read_only');
    await tab(ro, 'sessions');
    await ro.waitForSelector('#workflows tr', { timeout: 20000 });
    expect(await ro.$$eval('button.control', (b) => b.length) === 0, 'no control buttons for read_only');
    expect(!(await ro.$('#workflow-start')), 'no start form for read_only');
    const dryRunShown = await ro.evaluate(() => Boolean(document.getElementById('dryrun-form')));
    const dryRunAllowed = await ro.evaluate(() => window.orchestrataConsole.can('governance.evaluate'));
    expect(dryRunShown === dryRunAllowed, 'the dry-run form shows exactly when the scope may call governance.evaluate');
    const wf = await ro.$eval('#workflows tr', (tr) => tr.dataset.workflow);
    const refused = await ro.evaluate(async (id) => {
      try { await window.orchestrataConsole.gw.call('workflow.cancel', { workflow_id: id }); return null; } catch (e) { return { code: e.code, reason: e.data.reason }; }
    }, wf);
    expect(refused && refused.code === -32001 && refused.reason === 'insufficient_scope', `server refuses workflow.cancel for read_only (${JSON.stringify(refused)})`);
    await shot(ro, 'readonly');

    step('gap');
    // A gateway.gap notice (what the gateway sends when it had to drop events it could
    // not queue for this page) shows as a notice whose "fill" replays exactly the range.
    await tab(ro, 'traffic');
    const gapFrom = Math.min(...Object.values(await ro.$$eval('#traffic-rows tr', (trs) => trs.map((t) => Number(t.cells[0].textContent)))));
    await ro.evaluate(({ from }) => {
      const sub = window.orchestrataConsole.gw.subs.get('cxp.traffic');
      window.orchestrataConsole.gw.frame(JSON.stringify({ jsonrpc: '2.0', method: 'gateway.gap', params: {
        topic: 'cxp.traffic', subscription: sub.id, dropped: 4, sequence_from: from, sequence_to: from + 3, epoch: sub.epoch } }));
    }, { from: gapFrom });
    await ro.waitForSelector('.notice .notice-action', { timeout: 5000 });
    const noticeText = await ro.textContent('.notice');
    expect(noticeText.includes(`#${gapFrom}..#${gapFrom + 3}`), `the gap notice names the missing range (${noticeText})`);
    await shot(ro, 'gap');
    await ro.click('.notice .notice-action');
    await ro.waitForFunction(() => document.querySelector('.notice')?.textContent.includes('filled 4 events'), null, { timeout: 20000 });
    const afterFill = await rowCounts(ro);
    for (const [id, n] of Object.entries(afterFill)) expect(n === 1, `packet ${id} shown once after the fill`);

    step('load');
    // 3,000 cxp.traffic frames (a few seconds at 1,000 events/s) fed through the page's
    // own frame parser at 1,000 per second: the page keeps at most MAX_ROWS packets and
    // renders them all. The frames use an epoch of their own, so the real subscription's
    // resume position is not disturbed. Last step: the page is closed afterwards.
    await tab(ro, 'traffic');
    await ro.evaluate(async () => {
      const gw = window.orchestrataConsole.gw;
      const frame = (i) => JSON.stringify({ jsonrpc: '2.0', method: 'cxp.traffic', params: {
        topic: 'cxp.traffic', sequence: 1e9 + i, epoch: 'load-test', timestamp: new Date().toISOString(),
        source: 'e2e', event_type: 'packet_sent', key: `load-${i}`, payload: { packet: {
          message_id: `load-${i}`, from_agent: 'U:Lt', to_agent: 'U:Ox', thread_id: `load-${i}`, subject: 'load',
          priority: 5, delivery_status: 'queued', work_status: 'pending' } } } });
      for (let s = 0; s < 3; s += 1) {
        const start = performance.now();
        for (let i = 0; i < 1000; i += 1) {
          gw.frame(frame(s * 1000 + i));
          if (i % 100 === 99) await new Promise((r) => setTimeout(r, Math.max(0, start + (i + 1) - performance.now())));
        }
      }
    });
    await ro.waitForFunction(() => document.querySelectorAll('#traffic-rows tr[data-message-id="load-2999"]').length === 1, null, { timeout: 20000 });
    const kept = await ro.$$eval('#traffic-rows tr', (trs) => trs.length);
    expect(kept === 500, `the table keeps the newest 500 packets under load (kept ${kept})`);
    expect(!(await ro.$('#traffic-rows tr[data-message-id="load-2499"]')), 'older packets were dropped from the table');
    console.log(`@@done ${JSON.stringify({ workflow: wf })}`);
  } catch (e) {
    if (current) {
      const where = join(process.env.TMPDIR || '/tmp', 'console-e2e-failure.png');
      await current.screenshot({ path: where }).then(() => console.error(`failure screenshot: ${where}`), () => {});
    }
    throw e;
  } finally {
    await browser.close();
  }
}

let current = null; // the page being driven, for a screenshot of a failure
main().then(() => process.exit(0), (e) => { console.error(e.stack || String(e)); process.exit(1); });
