// The local-container runner keeps every line a container printed, once, and nothing else, also
// when following its logs fails as it ends. podman answers the follow request 200, then inspects
// the container; when the process has just gone, it writes its error JSON into the body instead of
// the logs (`read /proc/N/cgroup: no such process`), and the runner recorded that JSON as a log
// line and lost the task's own (test/workflow-containers.test.ts, once). The race cannot be won on
// purpose, so a proxy in front of the real podman puts podman's answer in place of the follow
// answer, at its start or after some frames; everything else is the real engine's.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalContainerRunner } from '../src/runners/local-container.js';
import type { ContainerTaskSpec, LogStream } from '../src/runners/types.js';
import { ensurePodman, TEST_IMAGE } from './helpers/podman.js';

const project = `svc-logs-${process.pid}`;
const LINES = 60;
// stdout and stderr interleaved, and a last stdout line without its newline
const SCRIPT = `for i in $(seq 1 ${LINES}); do echo out$i; echo err$i >&2; done; printf last`;
const expected = (stream: LogStream) => [...Array.from({ length: LINES }, (_, i) => `${stream === 'stdout' ? 'out' : 'err'}${i + 1}`), ...(stream === 'stdout' ? ['last'] : [])];

/** What podman writes into a 200 answer when the container's process went away meanwhile. */
const podmanError = (id: string) => `${JSON.stringify({ cause: 'no such process', message: `failed to obtain logs for Container '${id}': read /proc/4242/cgroup: no such process`, response: 500 })}\n`;

/**
 * The Docker API of the real engine on a TCP port; a follow answer for logs passes on `frames`
 * whole frames of the engine's answer, then podman's error JSON, and ends.
 */
async function engineProxy(socketPath: string, frames: number): Promise<{ url: string; follows: number; close(): void }> {
  const state = { follows: 0 };
  const server = http.createServer((req, res) => {
    const up = http.request({ socketPath, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const follow = /\/containers\/([^/]+)\/logs\?.*follow=true/.exec(req.url ?? '');
      if (!follow || answer.statusCode !== 200) { res.writeHead(answer.statusCode ?? 502, answer.headers); answer.pipe(res); return; }
      state.follows++;
      res.writeHead(200, { 'content-type': 'application/json' });
      let left = frames;
      let buf = Buffer.alloc(0);
      const fail = () => { res.end(podmanError(follow[1]!)); answer.destroy(); };
      if (left === 0) { fail(); return; }
      answer.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        // whole frames only, as podman writes them: 8-byte header, then its payload's length
        while (left > 0 && buf.length >= 8 && buf.length >= 8 + buf.readUInt32BE(4)) {
          const end = 8 + buf.readUInt32BE(4);
          res.write(buf.subarray(0, end));
          buf = buf.subarray(end);
          if (--left === 0) fail();
        }
      });
      answer.on('end', () => { if (left > 0) res.end(); });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `tcp://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get follows() { return state.follows; },
    close: () => { server.closeAllConnections(); server.close(); },
  };
}

describe('local-container runner: the logs of a container that ends while they are followed', () => {
  let socketPath: string;
  let seq = 0;
  before(async () => { socketPath = (await ensurePodman()).slice('unix://'.length); });

  const spec = (): ContainerTaskSpec => ({
    name: `svc-${project}-t${++seq}-1`, image: TEST_IMAGE, command: ['/bin/sh', '-c', SCRIPT], env: {},
    inputFiles: {}, outputFiles: [], workingDir: '/work', delete: true, labels: {},
  });

  async function runThrough(frames: number) {
    const proxy = await engineProxy(socketPath, frames);
    try {
      const runner = createLocalContainerRunner({ host: proxy.url, project });
      const got: Record<LogStream, string[]> = { stdout: [], stderr: [] };
      const result = await runner.run(spec(), { onLog: (line, stream) => got[stream].push(line), signal: new AbortController().signal });
      assert.equal(proxy.follows, 1, 'the runner followed the logs through the proxy');
      return { result, got };
    } finally {
      proxy.close();
    }
  }

  for (const frames of [0, 25]) {
    it(`podman's error after ${frames} frames of the follow answer: every line once, in order, no error text`, async () => {
      const { result, got } = await runThrough(frames);
      assert.deepEqual(result, { exitCode: 0, outcome: 'exited', outputFiles: {} });
      assert.deepEqual(got.stdout, expected('stdout'));
      assert.deepEqual(got.stderr, expected('stderr'));
    });
  }

  it('without the proxy, the real engine: every line once, in order', async () => {
    const runner = createLocalContainerRunner({ host: `unix://${socketPath}`, project });
    const got: Record<LogStream, string[]> = { stdout: [], stderr: [] };
    const result = await runner.run(spec(), { onLog: (line, stream) => got[stream].push(line), signal: new AbortController().signal });
    assert.equal(result.exitCode, 0);
    assert.deepEqual(got, { stdout: expected('stdout'), stderr: expected('stderr') });
  });

});
