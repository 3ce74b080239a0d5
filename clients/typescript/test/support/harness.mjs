// What the exactly-once tests share: the echo agent as a child process, a TCP proxy
// that can cut every connection, a sender with one idempotency key per packet, and a
// tally of the log (read back through gateway.replay) of what happened to each packet.

import { spawn } from 'node:child_process';
import { createServer, connect as tcpConnect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Gateway } from '../../dist/index.js';

const AGENT_SCRIPT = fileURLToPath(new URL('./echo_agent.mjs', import.meta.url));

/** Packets per exactly-once test (TSCLIENT_PACKETS; the 10,000 runs with TSCLIENT_PACKETS=10000). */
export const PACKETS = Number(process.env.TSCLIENT_PACKETS || 400);

/** The echo agent process; `kill()` is kill -9. */
export class Agent {
  constructor(url, token, cursor, ack) {
    this.child = spawn(process.execPath, [AGENT_SCRIPT, url, token, cursor], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TSCLIENT_ACK: ack ? '1' : '0' } });
    this.errors = [];
    createInterface({ input: this.child.stderr }).on('line', (l) => this.errors.push(l));
    createInterface({ input: this.child.stdout }).on('line', () => {});
    this.exited = new Promise((r) => this.child.once('exit', (code, sig) => r({ code, sig })));
  }

  async kill() {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM: the agent drains and exits 0. */
  async stop() {
    this.child.kill('SIGTERM');
    return this.exited;
  }
}

/** A loopback TCP proxy to `port`; `cut()` destroys every connection through it. */
export class Proxy {
  static async start(port) {
    const p = new Proxy(port);
    await new Promise((r) => p.server.listen(0, '127.0.0.1', r));
    p.url = `ws://127.0.0.1:${p.server.address().port}/`;
    return p;
  }

  constructor(port) {
    this.sockets = new Set();
    this.cuts = 0;
    this.server = createServer((client) => {
      const upstream = tcpConnect(port, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  cut() {
    this.cuts += 1;
    for (const s of this.sockets) s.destroy();
  }

  close() {
    this.cut();
    return new Promise((r) => this.server.close(r));
  }
}

/** Sends `n` packets to U:Vz, 50 in flight, each with its own idempotency key. */
export async function sendAll(gw, n, tag) {
  let next = 0;
  async function lane() {
    while (next < n) {
      const i = next++;
      await gw.cxp.send({ target: 'U:Vz', subject: 'echo', payload: { i, tag } }, { idempotencyKey: `${tag}-${i}` });
    }
  }
  await Promise.all(Array.from({ length: 50 }, lane));
}

/**
 * A running tally of cxp.traffic read back from the log: per packet sent to U:Vz, how
 * many acknowledgements, moves to in_progress and replies the log holds.
 */
export class Tally {
  constructor(gw, tag) {
    this.gw = gw;
    this.tag = tag;
    this.next = 0;
    this.packets = new Map(); // message_id -> {thread, acks, inProgress, replies}
    this.byThread = new Map();
    this.strays = [];
  }

  async advance() {
    const head = await this.gw.gateway.replay({ topic: 'cxp.traffic', count: 1 });
    const newest = head.buffer_range?.newest_sequence;
    if (newest === null || newest === undefined) return;
    while (this.next <= newest) {
      const to = Math.min(newest, this.next + 4_999);
      const r = await this.gw.gateway.replay({ topic: 'cxp.traffic', sequence_from: this.next, sequence_to: to });
      for (const ev of r.events) this.count(ev);
      this.next = to + 1;
    }
  }

  count(ev) {
    const p = ev.payload ?? {};
    if (ev.event_type === 'packet_sent') {
      const k = p.packet;
      const body = k.payload && 'json' in k.payload ? k.payload.json : k.payload; // the log's JSON form
      if (k.to_agent === 'U:Vz' && body?.tag === this.tag) {
        const entry = { thread: k.thread_id, acks: 0, inProgress: 0, replies: 0 };
        this.packets.set(k.message_id, entry);
        this.byThread.set(k.thread_id, entry);
      } else if (k.from_agent === 'U:Vz' && this.byThread.has(k.thread_id)) {
        this.byThread.get(k.thread_id).replies += 1;
      }
    } else if (ev.event_type === 'packet_acknowledged' && this.packets.has(p.message_id)) {
      this.packets.get(p.message_id).acks += 1;
    } else if (ev.event_type === 'work_status_changed' && p.new === 'in_progress' && this.packets.has(p.message_id)) {
      this.packets.get(p.message_id).inProgress += 1;
    }
  }

  /** Packets with a reply so far. */
  get answered() {
    let n = 0;
    for (const e of this.packets.values()) if (e.replies > 0) n += 1;
    return n;
  }
}

/** Polls `tally` until `n` packets are answered; calls `at(answered)` on each poll. */
export async function untilAnswered(tally, n, at = async () => {}, limitMs = 600_000) {
  const deadline = Date.now() + limitMs;
  while (true) {
    await tally.advance();
    await at(tally.answered);
    if (tally.answered >= n) return;
    if (Date.now() > deadline) throw new Error(`only ${tally.answered} of ${n} packets answered in ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Connects with a long call deadline (calls ride out a server restart). */
export function connect(url, token) {
  return Gateway.connect(url, { token, callTimeoutMs: 300_000, reconnect: { minDelayMs: 50, maxDelayMs: 1000 } });
}
