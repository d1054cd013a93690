// Private PostgreSQL and Redis servers a fault test stops and starts at will (the machine's shared
// ones must stay up for the other suites): a cluster made with `initdb` in a temporary folder on a
// free port, run as the `postgres` user when the test runs as root (PostgreSQL refuses root), and
// a `redis-server` child on a free port, with an append-only file when its data must outlive a
// restart.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import net from 'node:net';
import { freePort } from './net.js';

const run = promisify(execFile);

function pgBin(name: string): string {
  const root = '/usr/lib/postgresql';
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  return path.join(root, version!, 'bin', name);
}

export interface PrivatePostgres { url: string; port: number; start(): Promise<void>; stop(mode?: 'fast' | 'immediate'): Promise<void>; destroy(): Promise<void> }

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-pg-'));
  const data = path.join(dir, 'data');
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  let uid = 0; let gid = 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    uid = Number(stdout.trim());
    gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    await chown(dir, uid, gid);
    await chmod(dir, 0o700);
  }
  const pgRun = (bin: string, args: string[]) => run(pgBin(bin), args, asRoot ? { uid, gid, cwd: dir, env: { PATH: process.env.PATH ?? '' } } : { cwd: dir });
  await pgRun('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const start = async () => {
    await pgRun('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start',
      '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`]);
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    async stop(mode = 'immediate') { await pgRun('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']); },
    async destroy() {
      if (existsSync(path.join(data, 'postmaster.pid'))) await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string; port: number;
  start(): Promise<void>;
  /** Kills the server (SIGKILL: what an eviction does); `empty` also removes its data, so it comes back empty. */
  stop(opts?: { empty?: boolean }): Promise<void>;
  destroy(): Promise<void>;
}

/** With `persist`, every write goes to an append-only file (fsync always), so a restart keeps the data. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir],
      { stdio: 'ignore' });
    for (let i = 0; i < 200; i++) {
      if (await answers(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server on port ${port} did not start`);
  };
  const stop = async (opts: { empty?: boolean } = {}) => {
    const c = child;
    child = undefined;
    if (c && c.exitCode === null) {
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    }
    if (opts.empty) {
      for (const f of readdirSync(dir)) await rm(path.join(dir, f), { recursive: true, force: true });
    }
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`, port, start, stop,
    async destroy() { await stop(); await rm(dir, { recursive: true, force: true }); },
  };
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.write('PING\r\n'); });
    s.once('data', (d) => { s.destroy(); resolve(d.toString().startsWith('+PONG')); });
    s.once('error', () => resolve(false));
  });
}
