// Credentials and the `auth.authenticate` params they make (docs/gateway.md,
// "Authentication"). HMAC signs with Web Crypto (Node 20 and browsers alike); the
// secret never leaves the process.

import type { AuthAuthenticateParams } from './generated/types.js';

/** What `client_metadata` carries into `gateway.clients` and the presence events. */
export interface ClientMetadata {
  client_name?: string;
  client_version?: string;
  purpose?: string;
  [key: string]: unknown;
}

/** A token, or an HMAC client id and secret. */
export type Credentials = { token: string } | { hmac: { clientId: string; secret: string } };

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A random UUID (v4), from `crypto.randomUUID` where it exists. */
export function randomId(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** HMAC-SHA256 of `message` under `secret`, hex. */
export async function hmacSha256(secret: string, message: string): Promise<string> {
  const enc = new TextEncoder();
  const key = await globalThis.crypto.subtle.importKey('raw', enc.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return hex(await globalThis.crypto.subtle.sign('HMAC', key, enc.encode(message)));
}

/** The params of one `auth.authenticate` (an HMAC signature is fresh on every call). */
export async function authParams(creds: Credentials, metadata: ClientMetadata): Promise<AuthAuthenticateParams> {
  if ('token' in creds) {
    return { strategy: 'static_token', token: creds.token, client_metadata: metadata };
  }
  const { clientId, secret } = creds.hmac;
  const timestamp = new Date().toISOString();
  const nonce = randomId().replace(/-/g, '');
  const signature = await hmacSha256(secret, timestamp + nonce + clientId);
  return { strategy: 'hmac', client_id: clientId, timestamp, nonce, signature, client_metadata: metadata };
}
