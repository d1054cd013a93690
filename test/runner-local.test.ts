// The local-container runner against a REAL container engine: podman's Docker-API service started
// by scripts/podman.sh, with the locally built busybox image localhost/svc-test:1.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Docker from 'dockerode';
import { createLocalContainerRunner, type LocalContainerRunner } from '../src/runners/local-container.js';
import type { ContainerTaskSpec, LogStream, RunCallbacks } from '../src/runners/types.js';
import { ensurePodman, TEST_IMAGE } from './helpers/podman.js';

const project = `svc-test-${process.pid}-${Date.now()}`;
let runner: LocalContainerRunner;
let docker: Docker;
let seq = 0;

function spec(over: Partial<ContainerTaskSpec>): ContainerTaskSpec {
  seq++;
  return {
    name: `svc-${project}-t${seq}-1`,
    image: TEST_IMAGE,
    command: ['/bin/sh', '-c', 'true'],
    env: {},
    inputFiles: {},
    outputFiles: [],
    workingDir: '/work',
    delete: true,
    labels: { 'svc.execution': `ex-${seq}`, 'svc.task-run': `tr-${seq}` },
    ...over,
  };
}

function callbacks(signal = new AbortController().signal) {
  const lines: Array<[string, LogStream]> = [];
  const cb: RunCallbacks = { onLog: (line, stream) => lines.push([line, stream]), signal };
  return { cb, lines };
}

async function containersOf(name?: string): Promise<Docker.ContainerInfo[]> {
  const label = [`svc.project=${project}`];
  if (name) label.push(`svc.attempt=${name}`);
  return docker.listContainers({ all: true, filters: { label } });
}

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);

describe('local-container runner against a real podman engine', () => {
  before(async () => {
    const host = await ensurePodman();
    runner = createLocalContainerRunner({ host, project });
    docker = runner.docker;
  }, { timeout: 15 * 60_000 });

  after(async () => {
    if (!docker) return;
    // the suite leaves nothing behind: assert first, then clean up whatever a failure left
    const left = await containersOf();
    for (const c of left) await docker.getContainer(c.Id).remove({ force: true }).catch(() => {});
    assert.deepEqual(left.map((c) => c.Names), [], 'containers left behind by the suite');
  });

  it('streams stdout and stderr lines in order, with their stream, and flushes a last partial line', async () => {
    const { cb, lines } = callbacks();
    const s = spec({
      command: ['/bin/sh', '-c', 'echo out1; sleep 0.2; echo err1 >&2; sleep 0.2; echo "out 2"; sleep 0.2; printf "err2-partial" >&2'],
    });
    const res = await runner.run(s, cb);
    assert.equal(res.outcome, 'exited');
    assert.equal(res.exitCode, 0);
    assert.deepEqual(lines, [['out1', 'stdout'], ['err1', 'stderr'], ['out 2', 'stdout'], ['err2-partial', 'stderr']]);
    assert.deepEqual(await containersOf(s.name), [], 'container removed after the run');
  });

  it('runs the command as the whole argv (the image CMD is not appended)', async () => {
    const { cb, lines } = callbacks();
    const res = await runner.run(spec({ command: ['echo', 'hi'] }), cb);
    assert.equal(res.exitCode, 0);
    assert.deepEqual(lines, [['hi', 'stdout']]);
  });

  it('reports a non-zero exit code', async () => {
    const { cb, lines } = callbacks();
    const res = await runner.run(spec({ command: ['/bin/sh', '-c', 'echo failing >&2; exit 3'] }), cb);
    assert.equal(res.outcome, 'exited');
    assert.equal(res.exitCode, 3);
    assert.deepEqual(lines, [['failing', 'stderr']]);
  });

  it('places input files in the working directory before the command starts', async () => {
    const { cb, lines } = callbacks();
    const res = await runner.run(
      spec({
        workingDir: '/data/run',
        inputFiles: { 'input.txt': enc('hello input\n'), 'sub/dir/data.csv': enc('a,b\n1,2\n') },
        command: ['/bin/sh', '-c', 'pwd; cat input.txt; cat sub/dir/data.csv'],
      }),
      cb,
    );
    assert.equal(res.exitCode, 0);
    assert.deepEqual(lines.map(([l]) => l), ['/data/run', 'hello input', 'a,b', '1,2']);
  });

  it('refuses input paths outside the working directory', async () => {
    const { cb } = callbacks();
    await assert.rejects(runner.run(spec({ inputFiles: { '../etc/passwd': enc('x') } }), cb), /must not contain '\.\.'/);
    await assert.rejects(runner.run(spec({ inputFiles: { '/etc/passwd': enc('x') } }), cb), /must be relative/);
  });

  it('collects output files named literally, by glob and by directory', async () => {
    const { cb } = callbacks();
    const res = await runner.run(
      spec({
        command: [
          '/bin/sh',
          '-c',
          'mkdir -p out/deep res; echo result > result.txt; echo a > out/a.csv; echo deep > out/deep/d.csv; ' +
            'echo b > out/b.txt; printf "\\001\\002\\377" > res/bin.dat; echo no > other.log; exit 1',
        ],
        outputFiles: ['result.txt', 'out/*.csv', 'res', 'missing.txt'],
      }),
      cb,
    );
    assert.equal(res.exitCode, 1, 'outputs are collected whatever the exit code');
    assert.deepEqual(Object.keys(res.outputFiles).sort(), ['out/a.csv', 'res/bin.dat', 'result.txt']);
    assert.equal(dec(res.outputFiles['result.txt']), 'result\n');
    assert.equal(dec(res.outputFiles['out/a.csv']), 'a\n');
    assert.deepEqual([...res.outputFiles['res/bin.dat']!], [1, 2, 255]);
  });

  it('passes the environment', async () => {
    const { cb, lines } = callbacks();
    const res = await runner.run(
      spec({ env: { GREETING: 'hello there', QUOTED: `it's "q"` }, command: ['/bin/sh', '-c', 'echo "$GREETING"; echo "$QUOTED"'] }),
      cb,
    );
    assert.equal(res.exitCode, 0);
    assert.deepEqual(lines.map(([l]) => l), ['hello there', `it's "q"`]);
  });

  it('stops a run after timeoutMs (outcome timeout) and removes the container', async () => {
    const { cb, lines } = callbacks();
    const s = spec({ command: ['/bin/sh', '-c', 'echo started; sleep 30'], timeoutMs: 1500, killGraceSecs: 1 });
    const t0 = Date.now();
    const res = await runner.run(s, cb);
    const ms = Date.now() - t0;
    assert.equal(res.outcome, 'timeout');
    assert.ok(ms >= 1400 && ms < 15_000, `took ${ms} ms`);
    assert.notEqual(res.exitCode, 0);
    assert.deepEqual(lines, [['started', 'stdout']]);
    assert.deepEqual(await containersOf(s.name), [], 'container gone');
  });

  it('stops a run when the signal aborts (outcome killed)', async () => {
    const ac = new AbortController();
    const lines: string[] = [];
    const s = spec({ command: ['/bin/sh', '-c', 'echo ready; sleep 30'], killGraceSecs: 1 });
    const t0 = Date.now();
    const res = await runner.run(s, {
      signal: ac.signal,
      onLog: (line) => { lines.push(line); if (line === 'ready') ac.abort(); },
    });
    assert.equal(res.outcome, 'killed');
    assert.ok(Date.now() - t0 < 15_000);
    assert.deepEqual(lines, ['ready']);
    assert.deepEqual(await containersOf(s.name), []);
  });

  it('does not start a run whose signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    const s = spec({ command: ['/bin/sh', '-c', 'echo should-not-run'] });
    const { lines } = callbacks();
    const res = await runner.run(s, { signal: ac.signal, onLog: (l, st) => lines.push([l, st]) });
    assert.equal(res.outcome, 'killed');
    assert.equal(res.exitCode, null);
    assert.deepEqual(lines, []);
    assert.deepEqual(await containersOf(s.name), []);
  });

  it('keeps the container with delete:false; removeKept removes it only once it ended before the cut-off', async () => {
    const { cb } = callbacks();
    const s = spec({ command: ['/bin/sh', '-c', 'echo kept'], delete: false });
    const res = await runner.run(s, cb);
    assert.equal(res.exitCode, 0);
    const kept = await containersOf(s.name);
    assert.equal(kept.length, 1);
    assert.equal(kept[0]!.Labels['svc.kept'], 'true');
    assert.equal(kept[0]!.Labels['svc.execution'], `ex-${seq}`);

    // ended after the cut-off: stays
    assert.equal(await runner.removeKept(new Date(Date.now() - 3600_000)), 0);
    assert.equal((await containersOf(s.name)).length, 1);

    // a runner of another project never touches it
    const other = createLocalContainerRunner({ host: `unix://${(docker.modem as unknown as { socketPath: string }).socketPath}`, project: `${project}-other` });
    assert.equal(await other.removeKept(new Date(Date.now() + 3600_000)), 0);
    assert.equal((await containersOf(s.name)).length, 1);

    // ended before the cut-off: removed
    assert.equal(await runner.removeKept(new Date(Date.now() + 3600_000)), 1);
    assert.deepEqual(await containersOf(s.name), []);
  });

  it('fails clearly, naming the image, when the image is missing and cannot be pulled', async () => {
    const { cb } = callbacks();
    const s = spec({ image: 'localhost/svc-missing-image:1', command: ['true'] });
    await assert.rejects(runner.run(s, cb), (err: Error) => {
      assert.match(err.message, /^image localhost\/svc-missing-image:1 is not present on the container engine and pulling it failed: /);
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    });
    assert.deepEqual(await containersOf(s.name), []);
  });
});
