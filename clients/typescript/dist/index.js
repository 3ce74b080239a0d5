// @orchestrata/client: the Orchestrata gateway from Node 20 and browsers.
// docs/clients.md shows an echo agent, resume and exactly-once handling.
export { Gateway } from './gateway.js';
export { Volk, Packet } from './volk.js';
export { Subscription } from './subscription.js';
export { MemoryCursor, FileCursor } from './cursor.js';
export { READ_METHODS } from './connection.js';
export { hmacSha256, randomId } from './auth.js';
export * from './errors.js';
export * from './generated/methods.js';
