// Every CLI failure is one line on stderr and a non-zero exit, never a stack trace.
import { DomainError } from '../errors.js';
import { describeUrl } from '../db/index.js';

export class CliError extends Error {}

/** Turns an error into the one line the operator sees. */
export function oneLine(err: unknown, databaseUrl?: string): string {
  if (err instanceof DomainError) return `${err.code}: ${err.message}`;
  const e = err as { code?: unknown; message?: unknown; name?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : String(err);
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
