/** The part of the WHATWG WebSocket the client uses (the `ws` package has it too). */
export interface SocketLike {
    readonly readyState: number;
    onopen: ((ev: unknown) => void) | null;
    onmessage: ((ev: {
        data: unknown;
    }) => void) | null;
    onclose: ((ev: {
        code: number;
        reason: string;
    }) => void) | null;
    onerror: ((ev: unknown) => void) | null;
    send(data: string): void;
    close(code?: number, reason?: string): void;
}
/** A WebSocket constructor (`globalThis.WebSocket`, `ws`'s default export, ...). */
export type SocketConstructor = new (url: string) => SocketLike;
/** `readyState` of an open socket (the same constant in every implementation). */
export declare const OPEN = 1;
/** The constructor to use: `given`, else the global one, else `ws` (loaded once). */
export declare function socketConstructor(given?: SocketConstructor): Promise<SocketConstructor>;
/** A text frame's data as a string (`ws` may hand a Buffer). */
export declare function frameText(data: unknown): string;
