// The checked-in output of the generator and of tsc are what a fresh run makes: a
// change of schemas/json/gateway/ (the contract) or of src/ that was not regenerated
// and rebuilt fails here, and the console (which serves dist/) never runs stale code.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from '../scripts/generate.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function files(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else out.push(path);
  }
  return out.sort();
}

test('src/generated/ equals a fresh generation from schemas/json/gateway/', () => {
  for (const [name, text] of Object.entries(generate())) {
    const checkedIn = readFileSync(join(ROOT, 'src', 'generated', name), 'utf8');
    assert.ok(checkedIn === text, `src/generated/${name} is stale: run \`npm run build\` in clients/typescript and commit the result`);
  }
});

test('dist/ equals a fresh tsc build of src/', () => {
  const out = mkdtempSync(join(tmpdir(), 'tsclient-dist-'));
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json'), '--outDir', out], { stdio: 'inherit' });
  const fresh = files(out).map((f) => relative(out, f));
  const dist = join(ROOT, 'dist');
  assert.deepEqual(files(dist).map((f) => relative(dist, f)), fresh, 'dist/ holds exactly the files tsc makes');
  for (const f of fresh) {
    assert.ok(readFileSync(join(out, f), 'utf8') === readFileSync(join(dist, f), 'utf8'), `dist/${f} is stale: run \`npm run build\` in clients/typescript and commit the result`);
  }
});

test('every gateway method has a typed function', async () => {
  const { METHOD_NAMES, bindNamespaces } = await import('../dist/index.js');
  const called = [];
  const ns = bindNamespaces(async (m) => called.push(m));
  for (const m of METHOD_NAMES) {
    const [space, ...rest] = m.split('.');
    const member = rest.join('_').replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    await ns[space][member]({});
  }
  assert.deepEqual(called, [...METHOD_NAMES]);
});
