// The WebSocket the client speaks through: the browser's, Node's global one where it
// exists, else the `ws` package (Node 20 has no global WebSocket without a flag).
/** `readyState` of an open socket (the same constant in every implementation). */
export const OPEN = 1;
let cached = null;
/** The constructor to use: `given`, else the global one, else `ws` (loaded once). */
export async function socketConstructor(given) {
    if (given)
        return given;
    const global = globalThis.WebSocket;
    if (global)
        return global;
    if (!cached) {
        const name = 'ws';
        const mod = (await import(name));
        cached = mod.default;
    }
    return cached;
}
/** A text frame's data as a string (`ws` may hand a Buffer). */
export function frameText(data) {
    return typeof data === 'string' ? data : String(data);
}
