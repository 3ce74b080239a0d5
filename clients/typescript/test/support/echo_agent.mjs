// An echo agent in its own process, as a user would run one: the inbox of U:Vz from a
// cursor file (argv: url token cursor-file); every packet is acknowledged (when
// TSCLIENT_ACK=1), put in progress and answered. Prints `ready` once subscribed and `handled N` as it goes.
import { Gateway } from '../../dist/index.js';

const [url, token, cursor] = process.argv.slice(2);
const gw = await Gateway.connect(url, { token, callTimeoutMs: 300_000, reconnect: { minDelayMs: 50, maxDelayMs: 1000 } });
const volk = gw.volk('U:Vz', { cursor });
process.on('SIGTERM', () => gw.drain().then(() => process.exit(0)));
let handled = 0;
const inbox = volk.inbox();
console.log('ready');
const ack = process.env.TSCLIENT_ACK === '1';
for await (const packet of inbox) {
  if (ack) await packet.ack();
  await packet.work('in_progress');
  await packet.reply({ echo: packet.payload });
  handled += 1;
  if (handled % 100 === 0) console.log(`handled ${handled}`);
}
