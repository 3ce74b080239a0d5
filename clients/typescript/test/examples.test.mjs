// The examples of docs/clients.md run as written against a real `orchestrata up`: the
// echo agent answers a packet in its thread and drains on SIGTERM; the supervisor's
// juniors (the `upper` CLI driver: tr a-z A-Z) answer every task.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Gateway } from '../dist/index.js';
import { Up, AGENT, OPERATOR } from './support/up.mjs';

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));
let up;

before(async () => {
  up = await Up.start();
});

after(async () => {
  await up?.stop();
});

test('the echo agent answers in the thread and drains on SIGTERM', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'tsclient-echo-'));
  const agent = spawn(process.execPath, [join(EXAMPLES, 'echo.mjs'), up.url], { cwd, env: { ...process.env, AGENT_TOKEN: AGENT }, stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((r) => agent.once('exit', (code) => r(code)));
  const gw = await Gateway.connect(up.url, { token: OPERATOR });
  try {
    const sent = await gw.cxp.send({ target: 'U:Vz', subject: 'hello', payload: { text: 'hi' } });
    let reply = null;
    for (let i = 0; i < 200 && !reply; i += 1) {
      const status = await gw.cxp.status({ thread_id: sent.thread_id });
      reply = status.packets.find((p) => p.packet.from_agent === 'U:Vz');
      if (!reply) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(reply, 'U:Vz answered in the thread');
    const payload = reply.packet.payload.json ?? reply.packet.payload; // the log's JSON form
    assert.deepEqual(payload, { echo: { text: 'hi' } });
    agent.kill('SIGTERM');
    assert.equal(await exited, 0, 'the agent drained and exited 0');
  } finally {
    agent.kill('SIGKILL');
    gw.close();
  }
});

test('the supervisor collects every junior\'s answer', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(EXAMPLES, 'supervisor.mjs'), up.url, 'upper', 'first task', 'second task'], { env: { ...process.env, AGENT_TOKEN: AGENT }, timeout: 120_000 });
  const answers = JSON.parse(stdout.trim().split('\n').pop());
  assert.deepEqual(Object.keys(answers).sort(), ['first task', 'second task']);
  assert.match(String(answers['first task']), /FIRST TASK/);
  assert.match(String(answers['second task']), /SECOND TASK/);
});
