// Every CLI failure is one line on stderr and a non-zero exit, never a stack trace.
import { DomainError } from '../errors.js';
import { describeUrl } from '../db/url.js';

export class CliError extends Error {}

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another process listens there)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s',
};

/** Turns an error into the one line the operator sees. */
export function oneLine(err: unknown, databaseUrl?: string): string {
  if (err instanceof DomainError) return `${err.code}: ${err.message}`;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; syscall?: unknown; address?: unknown; port?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  // A listener that could not bind (server.port or apps.listen taken): not the database's fault.
  if (e?.syscall === 'listen') return `cannot listen on ${String(e.address)}:${String(e.port)}: ${LISTEN_REASONS[code] ?? code}`;
  // System errors (ECONNREFUSED ...) and PostgreSQL connection/auth/database classes 08, 28, 3D.
  if (databaseUrl && (/^E[A-Z]+$/.test(code) || /^(08|28|3D)/.test(code) || /connect|timeout/i.test(message)) && e?.name !== 'ConfigError') {
    return `cannot reach the database at ${describeUrl(databaseUrl)}: ${message || code}`.replace(/\s+/g, ' ');
  }
  return message.split('\n')[0];
}

export function fail(line: string, code = 1): never {
  process.stderr.write(line.endsWith('\n') ? line : `${line}\n`);
  process.exit(code);
}
