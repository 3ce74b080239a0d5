// Exactly-once handling against a real `orchestrata up` (issue 62): an echo agent in
// its own process handles PACKETS packets sent to U:Vz while (1) the server is killed
// with SIGKILL and restarted, (2) a proxy cuts the agent's connection, (3) the agent
// process itself is killed and restarted from its cursor file. Each time, counted from
// the log: every packet acknowledged, put in progress and answered once — none skipped,
// none twice.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Up, AGENT, OPERATOR } from './support/up.mjs';
import { Agent, Proxy, PACKETS, Tally, connect, sendAll, untilAnswered } from './support/harness.mjs';

function cursorFile() {
  return join(mkdtempSync(join(tmpdir(), 'tsclient-cursor-')), 'vz.cursor');
}

function assertExactlyOnce(tally, n) {
  assert.equal(tally.packets.size, n, `${n} packets sent to U:Vz, each once (idempotency keys)`);
  const wrong = [...tally.packets].filter(([, e]) => e.acks !== 1 || e.inProgress !== 1 || e.replies !== 1);
  assert.deepEqual(wrong.slice(0, 5), [], `every packet acknowledged, in progress and answered exactly once (${wrong.length} not)`);
}

test('the server killed (SIGKILL) and restarted while an agent works: every packet handled exactly once', async () => {
  const up = await Up.start();
  const agent = new Agent(up.url, AGENT, cursorFile(), true);
  const sender = await connect(up.url, OPERATOR);
  const counter = await connect(up.url, OPERATOR);
  try {
    const sending = sendAll(sender, PACKETS, 'crash');
    const tally = new Tally(counter, 'crash');
    let crashes = 0;
    await untilAnswered(tally, PACKETS, async (answered) => {
      if (crashes < 2 && answered >= ((crashes + 1) * PACKETS) / 3) {
        crashes += 1;
        await up.crash();
        await up.restart();
      }
    });
    await sending;
    assert.equal(crashes, 2, 'the server was killed twice mid-stream');
    await tally.advance();
    assertExactlyOnce(tally, PACKETS);
    assert.ok(sender.stats.reconnects >= 2 && counter.stats.reconnects >= 2, 'the clients reconnected');
  } finally {
    await agent.kill();
    sender.close();
    counter.close();
    await up.stop();
  }
});

test('a proxy cutting the agent\'s connection: every packet handled exactly once', async () => {
  const up = await Up.start();
  const proxy = await Proxy.start(up.port);
  const agent = new Agent(proxy.url, AGENT, cursorFile(), true);
  const sender = await connect(up.url, OPERATOR);
  const counter = await connect(up.url, OPERATOR);
  try {
    const sending = sendAll(sender, PACKETS, 'cut');
    const tally = new Tally(counter, 'cut');
    await untilAnswered(tally, PACKETS, async (answered) => {
      if (proxy.cuts < 3 && answered >= ((proxy.cuts + 1) * PACKETS) / 4) proxy.cut();
    });
    await sending;
    assert.equal(proxy.cuts, 3, 'the connection was cut three times mid-stream');
    await tally.advance();
    assertExactlyOnce(tally, PACKETS);
  } finally {
    await agent.kill();
    await proxy.close();
    sender.close();
    counter.close();
    await up.stop();
  }
});

test('the agent process killed and restarted with its cursor file: every packet handled exactly once', async () => {
  const up = await Up.start();
  const cursor = cursorFile();
  let agent = new Agent(up.url, AGENT, cursor, true);
  const sender = await connect(up.url, OPERATOR);
  const counter = await connect(up.url, OPERATOR);
  try {
    const sending = sendAll(sender, PACKETS, 'restart');
    const tally = new Tally(counter, 'restart');
    let kills = 0;
    await untilAnswered(tally, PACKETS, async (answered) => {
      if (kills < 2 && answered >= ((kills + 1) * PACKETS) / 3) {
        kills += 1;
        await agent.kill();
        agent = new Agent(up.url, AGENT, cursor, true);
      }
    });
    await sending;
    assert.equal(kills, 2, 'the agent was killed twice mid-stream');
    await tally.advance();
    assertExactlyOnce(tally, PACKETS);
    const stopped = await agent.stop();
    assert.equal(stopped.code, 0, `the agent drains and exits cleanly on SIGTERM (${agent.errors.join('\n')})`);
  } finally {
    await agent.kill();
    sender.close();
    counter.close();
    await up.stop();
  }
});
