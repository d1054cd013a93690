// compose.yaml (issue 10, interoperability): it parses, names the services and host ports the
// README promises, wires svc to them in a configuration svc accepts, and orders the start so
// svc only starts once PostgreSQL, Redis and the bucket are there. (Pulling images is not
// possible on these machines; the file is checked, not run.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig, startupChecks } from '../src/config/index.js';

interface Service { restart?: string; healthcheck?: { test: string[] }; image?: string; build?: string; ports?: string[]; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; entrypoint?: string[] }
const compose = parse(await readFile('compose.yaml', 'utf8')) as { services: Record<string, Service> };
const readme = await readFile('README.md', 'utf8');

test('the services and host ports the README names', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['postgres', 'redis', 's3', 's3-bucket', 'svc']);
  const hostPorts = (s: string) => (compose.services[s].ports ?? []).map((p) => p.split(':')[0]);
  assert.deepEqual(hostPorts('postgres'), ['5432']);
  assert.deepEqual(hostPorts('redis'), ['6379']);
  assert.ok(hostPorts('s3').includes('9000'));
  assert.deepEqual(hostPorts('svc'), ['8080']);
  assert.equal(compose.services.svc.build, '.', 'svc is built from the Dockerfile of this repository');
  for (const [what, port] of [['PostgreSQL', '5432'], ['Redis', '6379'], ['an S3 server', '9000'], ['svc', '8080']]) {
    assert.ok(new RegExp(`^- ${what}[^\\n]* on port ${port}`, 'm').test(readme), `README names ${what} on port ${port}`);
  }
  assert.match(readme, /podman compose up/);
  assert.match(readme, /docker compose up/);
});

test('svc starts after its dependencies are healthy and the bucket exists', () => {
  assert.deepEqual(compose.services.svc.depends_on, {
    postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' }, 's3-bucket': { condition: 'service_completed_successfully' },
  });
  const env = compose.services.svc.environment!;
  assert.match(compose.services['s3-bucket'].entrypoint!.join(' '), new RegExp(`mc mb --ignore-existing local/${env.SVC_STORAGE__BUCKET}`));
  assert.equal(compose.services.s3.environment!.MINIO_ROOT_USER, env.SVC_STORAGE__ACCESS_KEY);
  assert.equal(compose.services.s3.environment!.MINIO_ROOT_PASSWORD, env.SVC_STORAGE__SECRET_KEY);
  const pg = compose.services.postgres.environment!;
  assert.equal(env.SVC_DATABASE__URL, `postgres://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@postgres:5432/${pg.POSTGRES_DB}`);
});

test("svc's environment is a configuration svc accepts (every key known, startup checks pass)", async () => {
  const env = compose.services.svc.environment!;
  const config = loadConfig({ cwd: await mkdtemp(path.join(tmpdir(), 'svc-compose-')), env });
  startupChecks(config);
  assert.equal(config.server.host, '0.0.0.0');
  assert.equal(config.redis.url, 'redis://redis:6379');
  assert.equal(config.storage.endpoint, 'http://s3:9000');
  assert.ok(config.workflow.worker_enabled && config.workflow.scheduler_enabled);
  assert.equal(Buffer.from(env.SVC_SECRETS__MASTER_KEY, 'base64').length, 32);
});

// podman-compose 1.0 (Debian 12's) starts every service at once, ignoring depends_on conditions,
// and turns a CMD healthcheck list into `/bin/sh -c 'redis-cli'' ''ping'`, one word that is no
// command, so the service never turns healthy.
test('the file works with podman-compose 1.0 too: services that need others restart until they answer, healthchecks are shell strings', () => {
  assert.equal(compose.services.svc.restart, 'on-failure');
  assert.equal(compose.services['s3-bucket'].restart, 'on-failure');
  for (const [name, s] of Object.entries(compose.services)) {
    if (!s.healthcheck) continue;
    assert.equal(s.healthcheck.test[0], 'CMD-SHELL', name);
    assert.equal(s.healthcheck.test.length, 2, name);
  }
});

// SPEC 9.4 refuses floating tags for engines; the project's own images follow the same rule.
test('every image is pinned to a release: no latest, no bare major or minor', () => {
  for (const [name, s] of Object.entries(compose.services)) {
    if (!s.image || s.build) continue;
    const tag = /:([^/:@]+)$/.exec(s.image)?.[1];
    assert.ok(tag, `${name}: ${s.image} names a tag`);
    assert.notEqual(tag, 'latest', `${name}: ${s.image}`);
    assert.match(tag, /^(\d+\.\d+(\.\d+)?|RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)$/, `${name}: ${s.image} is a release (X.Y[.Z] or a MinIO RELEASE stamp)`);
  }
});
