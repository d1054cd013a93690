// Loading the configuration in the config-*.test.ts files: a svc.toml in a fresh temp dir and an
// explicit environment, so no test sees the machine's own variables or files.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from '../../src/config/index.js';

/** Load with an optional svc.toml (in a fresh temp dir, removed once read) and an explicit environment. */
export function load(toml: string | null, env: Record<string, string> = {}): Config {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  try {
    if (toml !== null) writeFileSync(join(dir, 'svc.toml'), toml);
    return loadConfig({ cwd: dir, env });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The ConfigError message of a failing load; asserts it is one line. */
export function loadError(toml: string | null, env: Record<string, string> = {}): string {
  try {
    load(toml, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), `message is not one line: ${err.message}`);
    return err.message;
  }
  assert.fail('expected loadConfig to throw');
}
