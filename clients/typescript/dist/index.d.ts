export { Gateway, type GatewayOptions } from './gateway.js';
export { Volk, Packet, type VolkOptions, type PacketBody } from './volk.js';
export { Subscription, type Position, type SubscribeOptions, type Topic, type Filters } from './subscription.js';
export { MemoryCursor, FileCursor, type CursorStore } from './cursor.js';
export { READ_METHODS, type Status, type ReconnectOptions } from './connection.js';
export { hmacSha256, randomId, type ClientMetadata, type Credentials } from './auth.js';
export * from './errors.js';
export * from './generated/methods.js';
export type * from './generated/types.js';
