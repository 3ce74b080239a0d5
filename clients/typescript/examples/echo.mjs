// The echo agent of docs/clients.md: node examples/echo.mjs ws://127.0.0.1:18790/ (AGENT_TOKEN acts as U:Vz)
import { Gateway } from '@orchestrata/client';

const gw = await Gateway.connect(process.argv[2] ?? 'ws://127.0.0.1:18790/', { token: process.env.AGENT_TOKEN });
const volk = gw.volk('U:Vz', { cursor: 'vz.cursor' });
process.on('SIGTERM', () => gw.drain().then(() => process.exit(0)));

for await (const packet of volk.inbox()) {
  await packet.work('in_progress');
  await packet.reply({ echo: packet.payload });
  await packet.resolve();
}
