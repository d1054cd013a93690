// Runs the built `svc` binary as an operator would, with an explicit environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { storageEnv } from './s3.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

export interface CliResult { code: number | null; stdout: string; stderr: string }

/** Environment without the caller's SVC_* variables, plus the given ones. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_') && v !== undefined) env[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export function runSvc(args: string[], opts: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], { env: opts.env ?? cleanEnv(), cwd: opts.cwd ?? ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`svc ${args.join(' ')} timed out\n${stderr}`)); }, opts.timeoutMs ?? 90_000);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** Starts a long-running `svc` child and resolves once `ready` matches its output (90 s by default: a loaded CI machine needs 30 s and more). */
export function spawnSvc(args: string[], opts: { env: Record<string, string>; cwd?: string; ready: RegExp; timeoutMs?: number; entry?: string[] }): Promise<{ child: ChildProcess; output: () => string }> {
  return new Promise((resolve, reject) => {
    const argv = opts.entry ?? [SVC_BIN];
    const child = spawn(process.execPath, [...argv, ...args], { env: opts.env, cwd: opts.cwd ?? ROOT });
    let out = '';
    let ready = false;
    const onData = (d: Buffer) => {
      out += d;
      // Keep the tail only: a long-running server under load logs a lot.
      if (out.length > 4_000_000) out = out.slice(-2_000_000);
      if (!ready && opts.ready.test(out)) { ready = true; clearTimeout(timer); resolve({ child, output: () => out }); }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`svc did not become ready:\n${out}`)); }, opts.timeoutMs ?? 90_000);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`svc exited with ${code} before ready:\n${out}`)); });
  });
}

export function waitExit(child: ChildProcess, timeoutMs = 70_000): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => reject(new Error('process did not exit')), timeoutMs);
    child.once('exit', (code) => { clearTimeout(timer); resolve(code); });
  });
}

/** The environment of a `svc` process pointed at a test database and S3 server. */
export function serviceEnv(dbUrl: string, s3: Parameters<typeof storageEnv>[0], extra: Record<string, string> = {}): Record<string, string> {
  return cleanEnv({
    SVC_DATABASE__URL: dbUrl,
    ...storageEnv(s3),
    ...extra,
  });
}

/** Signs in over HTTP on a running `svc serve`: the Cookie header and the CSRF header to send. */
export async function signInHttp(base: string, email: string, password: string): Promise<{ cookie: string; headers: Record<string, string> }> {
  const login = await fetch(`${base}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
  });
  if (login.status !== 200) throw new Error(`login ${login.status}`);
  const pairs = login.headers.getSetCookie().map((c) => c.split(';')[0]!);
  const cookie = pairs.join('; ');
  const csrf = pairs.find((c) => c.startsWith('svc_csrf='))?.slice('svc_csrf='.length) ?? '';
  return { cookie, headers: { cookie, 'x-svc-csrf': csrf } };
}
