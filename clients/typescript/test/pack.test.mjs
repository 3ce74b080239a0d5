// The package builds offline from the repository (`npm pack`: the checked-in dist/, no
// build step) and installs into a fresh folder (its one dependency, `ws`, from the npm
// cache that `npm ci` filled), where Node imports it by name.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function npm(args, cwd) {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' } });
}

test('npm pack builds offline and the tarball installs into a fresh folder', () => {
  const out = mkdtempSync(join(tmpdir(), 'tsclient-pack-'));
  const packed = JSON.parse(npm(['pack', '--offline', '--json', '--pack-destination', out], ROOT));
  const tarball = join(out, packed[0].filename);
  const names = packed[0].files.map((f) => f.path);
  for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/generated/methods.js', 'package.json', 'README.md']) {
    assert.ok(names.includes(f), `the tarball holds ${f}`);
  }
  assert.ok(!names.some((f) => f.startsWith('test/') || f.startsWith('node_modules/')), 'no tests or node_modules in the tarball');

  const app = mkdtempSync(join(tmpdir(), 'tsclient-app-'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  npm(['install', '--offline', '--no-save', tarball], app);
  writeFileSync(join(app, 'check.mjs'), `
    import { Gateway, UnknownTargetVolk, METHOD_NAMES } from '@orchestrata/client';
    console.log(JSON.stringify({ connect: typeof Gateway.connect, err: UnknownTargetVolk.contract, methods: METHOD_NAMES.length }));
  `);
  const seen = JSON.parse(execFileSync(process.execPath, [join(app, 'check.mjs')], { cwd: app, encoding: 'utf8' }));
  assert.deepEqual(seen, { connect: 'function', err: 'ERR-006', methods: 43 });
});
