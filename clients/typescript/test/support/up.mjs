// `orchestrata up` as a real child process for the tests: a temp dir with a config
// file and a data dir, a free loopback port, JSON logs (as tests/support/up.rs does).
//
// The binary: $ORCHESTRATA_BIN (tests/run.sh sets it to the cargo build's).

import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const OPERATOR = 'tsclient-operator-token';
/** read_write, acts as U:Vz: the agent. */
export const AGENT = 'tsclient-agent-token';
export const ADMIN = 'tsclient-admin-token';
export const READ_ONLY = 'tsclient-wall-token';
export const HMAC = { clientId: 'billing-bot', secret: 'tsclient-hmac-secret' };

const CONFIG = `
gateway:
  rate_limit_per_second: 100000
  tokens:
    - { token: "${AGENT}", scope: read_write, name: vz-agent, acts_as: [U:Vz] }
    - { token: "${ADMIN}", scope: admin, name: ops }
    - { token: "${READ_ONLY}", scope: read_only, name: wall }
  hmac:
    clients:
      ${HMAC.clientId}: { scope: read_write, secrets: ["${HMAC.secret}"], acts_as: [U:Cx], default_volk: U:Cx }
kernel:
  inbox_capacity: 1000000   # U:GW never reads the replies it is sent
agents:
  drivers:
    upper: { cli: [tr, a-z, A-Z], timeout_s: 30 }
  pipeline:   # a workflow run that stays open long enough to pause, resume and cancel
    coder: [sh, -c, "sleep 30"]
    task_timeout_s: 120
`;

export function binary() {
  const bin = process.env.ORCHESTRATA_BIN;
  if (!bin) throw new Error('set ORCHESTRATA_BIN to the orchestrata binary (tests/run.sh does)');
  return bin;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A running `up`: `url`, `stop()` (SIGTERM), `crash()` (SIGKILL), `restart()` on the same port and data. */
export class Up {
  static async start() {
    const dir = mkdtempSync(join(tmpdir(), 'tsclient-up-'));
    writeFileSync(join(dir, 'orchestrata.yaml'), CONFIG);
    const up = new Up(dir, await freePort());
    await up.launch();
    return up;
  }

  constructor(dir, port) {
    this.dir = dir;
    this.port = port;
    this.url = `ws://127.0.0.1:${port}/`;
    this.child = null;
    this.stderr = [];
  }

  async launch() {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ORCHESTRATA_') && !k.startsWith('_RJEM_') && k !== 'RUST_LOG'));
    Object.assign(env, {
      GATEWAY_TOKEN: OPERATOR,
      ORCHESTRATA_CONFIG: join(this.dir, 'orchestrata.yaml'),
      ORCHESTRATA_LOGGING__FORMAT: 'json',
      ORCHESTRATA_LOGGING__LEVEL: 'warn',
    });
    const child = spawn(binary(), ['up', '--listen', `127.0.0.1:${this.port}`, '--data-dir', join(this.dir, 'data')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    createInterface({ input: child.stderr }).on('line', (l) => {
      this.stderr.push(l);
      if (this.stderr.length > 200) this.stderr.shift();
    });
    const lines = createInterface({ input: child.stdout });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`up did not start in 60 s:\n${this.stderr.join('\n')}`)), 60_000);
      lines.on('line', (l) => {
        if (l.includes('gateway listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`up exited (${code}) before listening:\n${this.stderr.join('\n')}`));
      });
    });
    lines.on('line', () => {});
  }

  async signal(sig) {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    await gone;
  }

  /** kill -9. */
  crash() {
    return this.signal('SIGKILL');
  }

  async restart() {
    await this.launch();
  }

  /** SIGTERM, then the temp dir goes. */
  async stop() {
    await this.signal('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
