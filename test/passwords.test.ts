// Password hashing (src/identity/passwords.ts): argon2's native module loads on the first use, not
// at start, so a module that cannot load shows first at a sign-in. It must fail there as the
// fault it is, not answer every password as wrong (a sign-in then says "invalid credentials" to
// everyone and logs nothing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { hashPassword, verifyPassword } from '../src/identity/passwords.js';

test('a right, a wrong and a malformed hash', async () => {
  const hash = await hashPassword('correct horse');
  assert.equal(await verifyPassword(hash, 'correct horse'), true);
  assert.equal(await verifyPassword(hash, 'wrong'), false);
  assert.equal(await verifyPassword('not an argon2 hash', 'correct horse'), false);
});

test('argon2 that cannot load fails the check instead of calling the password wrong', async () => {
  const hash = await hashPassword('correct horse');
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-argon2-'));
  try {
    // the module as an image without it (or with a binary for another platform) has it: not found
    const preload = path.join(dir, 'no-argon2.cjs');
    await writeFile(preload, `const M = require('node:module'); const load = M._load;
M._load = function (req, ...rest) { if (req === '@node-rs/argon2') throw Object.assign(new Error("Cannot find module '@node-rs/argon2'"), { code: 'MODULE_NOT_FOUND' }); return load.call(this, req, ...rest); };`);
    const script = `import { verifyPassword } from ${JSON.stringify(path.resolve('src/identity/passwords.ts'))};
verifyPassword(${JSON.stringify(hash)}, 'correct horse').then((ok) => console.log('answered', ok), (err) => console.log('failed', err.code));`;
    const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, ['--import', 'tsx', '--require', preload, '--input-type=module', '-e', script],
      (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout.trim()))));
    assert.equal(out, 'failed MODULE_NOT_FOUND');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
