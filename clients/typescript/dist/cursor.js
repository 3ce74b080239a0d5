// Where an agent keeps its resume position: in memory, or in a JSON file (Node) so a
// restarted agent process resumes too. The file is replaced atomically (write a
// temporary file, then rename), so a crash leaves the old position or the new one.
/** A position kept in this process only. */
export class MemoryCursor {
    p;
    constructor(initial = null) {
        this.p = initial;
    }
    async load() {
        return this.p;
    }
    async save(p) {
        this.p = p;
    }
}
/** A position in a file `{"epoch": "...", "sequence": N}` (Node only). */
export class FileCursor {
    path;
    fs = null;
    constructor(path) {
        this.path = path;
    }
    async files() {
        if (!this.fs) {
            const name = 'node:fs/promises';
            this.fs = (await import(name));
        }
        return this.fs;
    }
    async load() {
        const fs = await this.files();
        let text;
        try {
            text = await fs.readFile(this.path, 'utf8');
        }
        catch (e) {
            if (e.code === 'ENOENT')
                return null;
            throw e;
        }
        const v = JSON.parse(text);
        if (typeof v.epoch !== 'string' || !Number.isSafeInteger(v.sequence) || v.sequence < 0) {
            throw new Error(`${this.path}: not a cursor ({"epoch": string, "sequence": integer >= 0})`);
        }
        return { epoch: v.epoch, sequence: v.sequence };
    }
    async save(p) {
        const fs = await this.files();
        const tmp = `${this.path}.tmp`;
        await fs.writeFile(tmp, JSON.stringify({ epoch: p.epoch, sequence: p.sequence }));
        await fs.rename(tmp, this.path);
    }
}
