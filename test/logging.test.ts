// log.filter directives, JSON vs readable lines, and redaction of secrets.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { createLogging, parseLogFilter } from '../src/log/logger.js';

function capture(filter: string, json = true) {
  const stream = new PassThrough();
  let out = '';
  stream.on('data', (d) => { out += d; });
  const logging = createLogging({ filter, json }, stream);
  return { logging, lines: () => out.split('\n').filter(Boolean) };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('log.filter', () => {
  test('parses levels and per-module directives', () => {
    assert.deepEqual(parseLogFilter('info'), { level: 'info', targets: [] });
    assert.deepEqual(parseLogFilter('warn,svc::jobs=debug'), { level: 'warn', targets: [['svc::jobs', 'debug']] });
    assert.deepEqual(parseLogFilter('off'), { level: 'silent', targets: [] });
    assert.equal(parseLogFilter('loud'), null);
    assert.equal(parseLogFilter('svc::jobs=chatty'), null);
    assert.equal(parseLogFilter(''), null);
  });

  test('a module gets its own level; others follow the default', async () => {
    const { logging, lines } = capture('warn,svc::jobs=debug');
    logging.module('svc::jobs').debug('jobs debug');
    logging.module('svc::jobs::reaper').debug('reaper debug');
    logging.module('svc::api').info('api info');
    logging.module('svc::api').warn('api warn');
    await tick();
    const msgs = lines().map((l) => JSON.parse(l).msg);
    assert.deepEqual(msgs, ['jobs debug', 'reaper debug', 'api warn']);
  });

  test('an invalid directive falls back to info with one warning', async () => {
    const { logging, lines } = capture('verbose!!');
    logging.module('svc::api').debug('hidden');
    logging.module('svc::api').info('shown');
    await tick();
    const parsed = lines().map((l) => JSON.parse(l));
    assert.equal(parsed.filter((p) => p.level === 40).length, 1);
    assert.match(parsed[0].msg, /invalid log\.filter directive; falling back to info/);
    assert.deepEqual(parsed.slice(1).map((p) => p.msg), ['shown']);
  });

  test('readable lines when log.json is false', async () => {
    const { logging, lines } = capture('info', false);
    logging.module('svc::api').info('hello reader');
    await tick();
    assert.match(lines()[0], /INFO.*hello reader/);
    assert.throws(() => JSON.parse(lines()[0]));
  });

  test('secrets are redacted', async () => {
    const { logging, lines } = capture('info');
    logging.root.info({ password: 'hunter2', req: { headers: { authorization: 'Bearer abc', cookie: 'svc_session=xyz' } }, client: { client_secret: 's3cr3t' } }, 'with secrets');
    await tick();
    const line = lines()[0];
    for (const secret of ['hunter2', 'Bearer abc', 'svc_session=xyz', 's3cr3t']) assert.ok(!line.includes(secret), secret);
    assert.match(line, /\[redacted\]/);
  });
});
