// Pipelined cxp.send through the client against a bare `ws` client doing the same
// calls on the same server in the same run (issue 62's target: the client >= 80 % of
// the bare sends/s), and the agent loop's packets/s (receive, reply).
//
//   ORCHESTRATA_BIN=... node bench/send.mjs [sends=5000] [window=256]
// A benchmark, not a test: it prints numbers and asserts nothing.

import WebSocket from 'ws';
import { Gateway } from '../dist/index.js';
import { Up, OPERATOR, AGENT } from '../test/support/up.mjs';

const SENDS = Number(process.argv[2] || 5000);
const WINDOW = Number(process.argv[3] || 256);

async function bare(url, n, tag) {
  const ws = new WebSocket(url);
  await new Promise((r) => ws.once('open', r));
  let id = 0;
  const waiting = new Map();
  ws.on('message', (d) => {
    const m = JSON.parse(String(d));
    const w = waiting.get(m.id);
    if (w) { waiting.delete(m.id); w(m); }
  });
  const call = (method, params) => new Promise((r) => { const my = ++id; waiting.set(my, r); ws.send(JSON.stringify({ jsonrpc: '2.0', id: my, method, params })); });
  await call('auth.authenticate', { strategy: 'static_token', token: OPERATOR });
  const start = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: WINDOW }, async () => {
    while (next < n) {
      const i = next++;
      const r = await call('cxp.send', { target: 'U:Vz', subject: 'bench', payload: { i }, idempotency_key: `${tag}-${i}` });
      if (r.error) throw new Error(JSON.stringify(r.error));
    }
  }));
  const secs = (performance.now() - start) / 1000;
  ws.close();
  return n / secs;
}

async function client(url, n, tag) {
  const gw = await Gateway.connect(url, { token: OPERATOR });
  const start = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: WINDOW }, async () => {
    while (next < n) {
      const i = next++;
      await gw.cxp.send({ target: 'U:Vz', subject: 'bench', payload: { i } }, { idempotencyKey: `${tag}-${i}` });
    }
  }));
  const secs = (performance.now() - start) / 1000;
  gw.close();
  return n / secs;
}

async function agentLoop(url, n) {
  const gw = await Gateway.connect(url, { token: AGENT });
  const volk = gw.volk('U:Vz', {});
  const start = performance.now();
  let handled = 0;
  for await (const packet of volk.inbox()) {
    await packet.reply({ ok: true });
    if (++handled === n) break;
  }
  const secs = (performance.now() - start) / 1000;
  gw.close();
  return n / secs;
}

const up = await Up.start();
try {
  const rounds = [];
  for (let r = 0; r < 2; r += 1) {
    rounds.push({ bare: await bare(up.url, SENDS, `bare-${r}`), client: await client(up.url, SENDS, `client-${r}`) });
  }
  const loop = await agentLoop(up.url, SENDS * 4);
  for (const [i, r] of rounds.entries()) {
    console.log(`round ${i}: bare ws ${r.bare.toFixed(0)} sends/s, client ${r.client.toFixed(0)} sends/s (${((100 * r.client) / r.bare).toFixed(0)} %)`);
  }
  console.log(`agent loop (receive, reply; catch-up of ${SENDS * 4} packets): ${loop.toFixed(0)} packets/s`);
} finally {
  await up.stop();
}
