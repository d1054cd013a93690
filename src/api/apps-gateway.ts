// The query gateway's one entry (docs/apps.md "The query gateway"), reached with an app token by
// two doors: the app's page on the apps origin (POST /_svc/query with the app cookie) and the
// app's pod through apps.pod.callback_url (POST /api/apps/query with X-Svc-App-Token: a notebook
// kernel runs its SQL server-side, as Databricks Apps' code calls with X-Forwarded-Access-Token).
// Both doors count against one rate limit per token, so two doors never double the allowance.
import type { Services } from '../services.js';
import { tokenHash, type AppTickets } from '../apps/tickets.js';
import { TokenRateLimiter } from '../apps/rate.js';
import { gatewayQuery } from '../apps/gateway.js';
import type { EngineResult, QueryParams } from '../queries/types.js';
import { DomainError, badRequest, unauthorized } from '../errors.js';

/** One limiter per running service (the apps listener and the API share it). */
const limiters = new WeakMap<Services, TokenRateLimiter>();

function limiterOf(s: Services): TokenRateLimiter {
  let l = limiters.get(s);
  if (!l) {
    l = new TokenRateLimiter(s.clock, s.config.apps.rate_max, s.config.apps.rate_window_secs);
    limiters.set(s, l);
  }
  return l;
}

const scalar = (v: unknown) => v === null || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && v.length <= 65_536);

/** Runs one gateway call of the app session behind `token` (unchecked input from either door). */
export async function gatewayCall(s: Services, tickets: AppTickets, token: string | undefined, body: unknown): Promise<EngineResult> {
  const cfg = s.config.apps;
  // The limit counts every call that presents a token, before the token is even looked up.
  if (token) {
    const wait = limiterOf(s).take(tokenHash(token));
    if (wait !== null) throw new DomainError('too_many_requests', `more than ${cfg.rate_max} calls in ${cfg.rate_window_secs} s: this app session is held for ${cfg.rate_window_secs} s`, wait);
  }
  const b = token ? await tickets.resolve(token) : null;
  if (!b) throw unauthorized('no app session: open the app again from the service');
  // A deleted app's sessions end with it (its pods are stopped; a page still open must not go on).
  const app = await s.db.selectFrom('apps').select('id').where('id', '=', b.appId).executeTakeFirst();
  if (!app) throw new DomainError('gone', 'this app was deleted');
  const q = body as { sql?: unknown; params?: unknown; engine?: unknown } | undefined;
  if (typeof q?.sql !== 'string' || q.sql.length === 0) throw badRequest('sql is required');
  const engine = q.engine ?? 'embedded';
  if (typeof engine !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(engine)) throw badRequest('engine is a name of lower-case letters, digits and -');
  const params = q.params ?? [];
  if (typeof params !== 'object' || params === null || !Object.values(params).every(scalar)) throw badRequest('params is an array or an object of JSON scalars');
  const r = await gatewayQuery({ engines: s.queryEngines, config: s.config, access: s.access }, b, { engine, sql: q.sql, params: params as QueryParams });
  return { columns: r.columns, rows: r.rows, truncated: r.truncated };
}
