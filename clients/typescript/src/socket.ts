// The WebSocket the client speaks through: the browser's, Node's global one where it
// exists, else the `ws` package (Node 20 has no global WebSocket without a flag).

/** The part of the WHATWG WebSocket the client uses (the `ws` package has it too). */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor (`globalThis.WebSocket`, `ws`'s default export, ...). */
export type SocketConstructor = new (url: string) => SocketLike;

/** `readyState` of an open socket (the same constant in every implementation). */
export const OPEN = 1;

let cached: SocketConstructor | null = null;

/** The constructor to use: `given`, else the global one, else `ws` (loaded once). */
export async function socketConstructor(given?: SocketConstructor): Promise<SocketConstructor> {
  if (given) return given;
  const global = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (global) return global;
  if (!cached) {
    const name = 'ws';
    const mod = (await import(name)) as { default: SocketConstructor };
    cached = mod.default;
  }
  return cached;
}

/** A text frame's data as a string (`ws` may hand a Buffer). */
export function frameText(data: unknown): string {
  return typeof data === 'string' ? data : String(data);
}
