import type { Position } from './subscription.js';
export interface CursorStore {
    load(): Promise<Position | null>;
    save(p: Position): Promise<void>;
}
/** A position kept in this process only. */
export declare class MemoryCursor implements CursorStore {
    private p;
    constructor(initial?: Position | null);
    load(): Promise<Position | null>;
    save(p: Position): Promise<void>;
}
/** A position in a file `{"epoch": "...", "sequence": N}` (Node only). */
export declare class FileCursor implements CursorStore {
    readonly path: string;
    private fs;
    constructor(path: string);
    private files;
    load(): Promise<Position | null>;
    save(p: Position): Promise<void>;
}
