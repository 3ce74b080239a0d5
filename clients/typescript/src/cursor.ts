// Where an agent keeps its resume position: in memory, or in a JSON file (Node) so a
// restarted agent process resumes too. The file is replaced atomically (write a
// temporary file, then rename), so a crash leaves the old position or the new one.

import type { Position } from './subscription.js';

export interface CursorStore {
  load(): Promise<Position | null>;
  save(p: Position): Promise<void>;
}

/** A position kept in this process only. */
export class MemoryCursor implements CursorStore {
  private p: Position | null;
  constructor(initial: Position | null = null) {
    this.p = initial;
  }
  async load(): Promise<Position | null> {
    return this.p;
  }
  async save(p: Position): Promise<void> {
    this.p = p;
  }
}

interface Fs {
  readFile(path: string, enc: 'utf8'): Promise<string>;
  writeFile(path: string, data: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
}

/** A position in a file `{"epoch": "...", "sequence": N}` (Node only). */
export class FileCursor implements CursorStore {
  readonly path: string;
  private fs: Fs | null = null;
  constructor(path: string) {
    this.path = path;
  }

  private async files(): Promise<Fs> {
    if (!this.fs) {
      const name = 'node:fs/promises';
      this.fs = (await import(name)) as Fs;
    }
    return this.fs;
  }

  async load(): Promise<Position | null> {
    const fs = await this.files();
    let text: string;
    try {
      text = await fs.readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as { code?: string }).code === 'ENOENT') return null;
      throw e;
    }
    const v = JSON.parse(text) as Partial<Position>;
    if (typeof v.epoch !== 'string' || !Number.isSafeInteger(v.sequence) || (v.sequence as number) < 0) {
      throw new Error(`${this.path}: not a cursor ({"epoch": string, "sequence": integer >= 0})`);
    }
    return { epoch: v.epoch, sequence: v.sequence as number };
  }

  async save(p: Position): Promise<void> {
    const fs = await this.files();
    const tmp = `${this.path}.tmp`;
    await fs.writeFile(tmp, JSON.stringify({ epoch: p.epoch, sequence: p.sequence }));
    await fs.rename(tmp, this.path);
  }
}
