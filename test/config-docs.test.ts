// Configuration layer: docs/configuration.md, rendered from the schema.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { envName, listLeaves, renderConfigDocs } from '../src/config/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('docs', () => {
  const md = renderConfigDocs();

  test('docs/configuration.md equals renderConfigDocs()', () => {
    const file = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
    assert.equal(file, md, 'regenerate with: npx tsx src/config/docs.ts > docs/configuration.md');
  });

  test('every schema leaf appears with its env variable and a description', () => {
    const leaves = listLeaves();
    assert.ok(leaves.length >= 140, `only ${leaves.length} leaves`);
    for (const leaf of leaves) {
      const key = leaf.path.join('.');
      const row = md.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
      assert.ok(row, `no row for ${key}`);
      assert.ok(row.includes(`\`${envName(leaf.path)}\``), `no env name for ${key}`);
      assert.ok((leaf.info.meta.description ?? '').length > 0, `no description for ${key}`);
    }
  });

  test('named rows, sections and notes', () => {
    for (const s of [
      '`SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES`',
      '`SVC_WORKFLOW__CLUSTER__DEFAULT_RESOURCES__REQUEST__EPHEMERAL_STORAGE`',
      '`SVC_DATA_API__PUBLIC_URL`',
      '`SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS`',
      '`SVC_OLAP__JDBC_DRIVERS__<DIALECT>__DRIVER_URL`',
      '| `redis.url` | `redis://127.0.0.1:6379` | `SVC_REDIS__URL` |',
      '| `server.port` | `8080` | `SVC_SERVER__PORT` |',
      '| `oidc.scopes` | `["openid","email","profile"]` | `SVC_OIDC__SCOPES` |',
      '**Addition to the specification:**',
      'SVC_OIDC__SCOPES=\'["openid","email","profile"]\'',
      '**Required with oidc.enabled.**',
      '### [workflow]',
      '#### [workflow.storage]',
      '#### [apps.pod]',
      'oidc.enabled requires security.secret_key (base64, >=64 bytes)',
    ]) {
      assert.ok(md.includes(s), s);
    }
  });

  test('docs.ts prints the markdown when run as a script', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'config', 'docs.ts')], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(out, md);
  });

  test('importing docs.ts prints nothing', () => {
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', '-e', `import(${JSON.stringify(join(ROOT, 'src', 'config', 'docs.ts'))})`],
      { cwd: ROOT, encoding: 'utf8' },
    );
    assert.equal(out, '');
  });
});
