// pino logger built from `[log]`: a Rust-style filter directive (`info`, `warn,svc::jobs=debug`)
// picks the level per module; `log.json` switches JSON lines vs readable lines.
import pino, { type Logger, type LevelWithSilent } from 'pino';
import { createRequire } from 'node:module';

// pino-pretty (about 30 modules) only for readable lines: JSON logging (production) never loads it.
const require = createRequire(import.meta.url);

const LEVELS: Record<string, LevelWithSilent> = {
  trace: 'trace', debug: 'debug', info: 'info', warn: 'warn', error: 'error', off: 'silent',
};

export interface LogFilter {
  level: LevelWithSilent;
  /** target prefix -> level, most specific (longest) first */
  targets: Array<[string, LevelWithSilent]>;
}

/** Parses a directive; returns null when any part is invalid (the caller falls back to info). */
export function parseLogFilter(directive: string): LogFilter | null {
  const filter: LogFilter = { level: 'info', targets: [] };
  const parts = directive.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
  if (parts.length === 0) return null;
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq < 0) {
      const lvl = LEVELS[part.toLowerCase()];
      if (lvl) { filter.level = lvl; continue; }
      // a bare module path enables everything for it, as env_logger does; any other word is a typo
      if (!/^svc(::[a-z_]+)*$/.test(part)) return null;
      filter.targets.push([part, 'trace']);
      continue;
    }
    const target = part.slice(0, eq).trim();
    const lvl = LEVELS[part.slice(eq + 1).trim().toLowerCase()];
    if (!lvl || !/^[A-Za-z_][\w:.-]*$/.test(target)) return null;
    filter.targets.push([target, lvl]);
  }
  filter.targets.sort((a, b) => b[0].length - a[0].length);
  return filter;
}

/** Every path that may carry a secret; pino replaces the value before serialising. */
export const REDACT_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]',
  'password', 'client_secret', 'secret', 'secret_key', 'master_key', 'access_key', 'auth_token',
  'token', 'logout_token', 'id_token', 'access_token', 'refresh_token', 'code_verifier', 'database_url',
  '*.password', '*.client_secret', '*.secret', '*.secret_key', '*.master_key', '*.access_key', '*.auth_token',
  '*.token', '*.logout_token', '*.id_token', '*.access_token', '*.refresh_token', '*.code_verifier',
];

const MAX_MODULE_LOGGERS = 256;

export interface Logging {
  root: Logger;
  /**
   * The access log: one line per request with fields fixed by construction (method, path without
   * query, status, time), so it skips the redaction pass every other line goes through.
   */
  access: Logger;
  /** logger for a module such as `svc::jobs`, at the level the filter gives that module */
  module(name: string): Logger;
}

export function createLogging(opts: { filter: string; json: boolean }, dest?: NodeJS.WritableStream): Logging {
  let filter = parseLogFilter(opts.filter);
  const invalid = filter === null;
  if (!filter) filter = { level: 'info', targets: [] };
  const lowest = [filter.level, ...filter.targets.map((t) => t[1])]
    .reduce((a, b) => (pino.levels.values[a === 'silent' ? 'fatal' : a] <= pino.levels.values[b === 'silent' ? 'fatal' : b] ? a : b));
  const stream = opts.json ? (dest ?? pino.destination({ fd: 2, sync: false }))
    : (require('pino-pretty') as typeof import('pino-pretty'))({ colorize: false, destination: (dest as any) ?? 2, sync: true, translateTime: 'SYS:standard', ignore: 'pid,hostname' });
  const root = pino({
    level: lowest,
    base: { pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: pino.stdSerializers.err },
  }, stream as any);
  const rootLogger = root.child({ module: 'svc' }, { level: levelFor('svc', filter) });
  if (invalid) rootLogger.warn({ directive: opts.filter }, 'invalid log.filter directive; falling back to info');
  const modules = new Map<string, Logger>();
  const access = pino({ level: levelFor('svc::api', filter), base: { pid: process.pid, module: 'svc::api' } }, stream as any);
  return {
    root: rootLogger,
    access,
    // One child per module name, made once: hot paths (a task attempt) ask for theirs each time.
    // Names are literals of the code, so the map stays small; a cap keeps it so regardless.
    module: (name) => {
      let child = modules.get(name);
      if (!child) {
        child = root.child({ module: name }, { level: levelFor(name, filter!) });
        if (modules.size < MAX_MODULE_LOGGERS) modules.set(name, child);
      }
      return child;
    },
  };
}

function levelFor(name: string, filter: LogFilter): LevelWithSilent {
  for (const [target, lvl] of filter.targets) {
    if (name === target || name.startsWith(target + '::')) return lvl;
  }
  return filter.level;
}
