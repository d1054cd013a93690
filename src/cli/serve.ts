// `svc serve`: startup checks, migrations, HTTP on server.host:server.port, the enabled loops,
// and a graceful stop on SIGTERM/SIGINT that drains in-flight requests for up to 55 s.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Config } from '../config/index.js';
import { createServices, type Services } from '../services.js';
import { migrateToLatest } from '../db/migrate.js';
import { describeUrl } from '../db/index.js';
import { buildApp } from '../api/app.js';
import { prepareSigningKeys } from '../idp/state.js';

/** apps.origin on another port of the service's host: not a sibling origin for cookies. */
export const COOKIE_TOSSING_WARNING = 'session.cookie_name or csrf.cookie_name has no __Host- prefix: an app on the apps origin can set a cookie of that name for the parent domain and overwrite the service\'s (cookie tossing); name them __Host-...';
export const SAME_HOST_WARNING = 'apps.origin shares its host with apps.service_origin: browsers send a host\'s cookies to every port, so apps are not isolated from the service; use a sibling subdomain';
import { loadCheckedConfig } from './config.js';
import { startLoops, startRequestLoops } from '../jobs/loops.js';
import { fail, oneLine } from './errors.js';
import { endsWithin, within } from '../util/deadline.js';

export const DRAIN_MS = 55_000;
/** How long a stop waits for the loops still starting, then for the services to close, before it goes on without them. */
export const LOOPS_START_WAIT_MS = 5_000;
export const SERVICES_CLOSE_MS = 15_000;
/** How long `svc serve` waits for Redis to answer once the migrations check is done. */
const REDIS_ANSWER_MS = 5_000;

/** How often the drain closes keep-alive connections that went idle (a response just ended on them). */
const DRAIN_IDLE_CHECK_MS = 100;

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  address: string;
  /** Stops accepting, drains in-flight requests up to the deadline, closes pools. */
  stop(): Promise<void>;
}

export interface StartOptions {
  drainMs?: number;
  /** Extra route plugins (test fixtures only). */
  plugins?: FastifyPluginAsync[];
  /** BullMQ key prefix (tests running several servers on one Redis give each its own). */
  queuePrefix?: string;
  /** Called once it listens, before the loops start (serveCommand takes the signals from then on). */
  onListening?: (server: RunningServer) => void;
}

export async function startServer(cfg: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const services = createServices(cfg, { queuePrefix: opts.queuePrefix });
  const log = services.log;
  // The checks mostly wait on PostgreSQL and Redis, and building the app (about 200 routes) is
  // CPU: the app is built meanwhile (buildApp goes back to the event loop between route families,
  // so the checks' round trips go on). It listens only once both are done; a failed check fails
  // the start as before (the app, built or not, never listens: its onReady hooks touch the
  // database and never run).
  const checked = startChecks(services, cfg);
  const built = buildApp({ services, logger: services.logging.module('svc::api'), document: false }).then(async (app) => {
    for (const p of opts.plugins ?? []) await app.register(p);
    return app;
  });
  built.catch(() => undefined); // awaited below, after the checks
  try {
    await checked;
  } catch (err) {
    await built.catch(() => undefined);
    throw err;
  }
  const app = await built;
  // While draining, a response ends its keep-alive connection (Connection: close).
  let draining = false;
  const closeWhenDraining = (server: FastifyInstance) => server.addHook('onSend', async (_req, reply, payload) => {
    if (draining && !reply.raw.headersSent) reply.header('connection', 'close');
    return payload;
  });
  closeWhenDraining(app);
  const address = await app.listen({ host: cfg.server.host, port: cfg.server.port });
  // The apps origin gets its own listener (SPEC 4.4), only when it is configured; both listen
  // before either is announced, so a client that waits for "listening" finds both.
  const appsOrigin = cfg.apps.origin ? await (await import('../api/apps-origin.js')).buildAppsOrigin({ services }) : null;
  if (appsOrigin) closeWhenDraining(appsOrigin);
  const appsAddress = appsOrigin ? await appsOrigin.listen(listenOn(cfg.apps.listen)) : null;
  log.info({ address }, 'listening');
  if (appsOrigin) {
    log.info({ address: appsAddress, origin: cfg.apps.origin }, 'apps listener listening');
    // Allowed (development, one machine), but cookies are per host, not per port: said loudly.
    if (new URL(cfg.apps.origin).hostname === new URL(cfg.apps.service_origin).hostname) log.warn({ origin: cfg.apps.origin, service_origin: cfg.apps.service_origin }, SAME_HOST_WARNING);
    // An app's own code runs on a sibling host, which may set cookies for the shared parent domain;
    // only a __Host- cookie cannot be set or overwritten from there.
    if (![cfg.session.cookie_name, cfg.csrf.cookie_name].every((n) => /^__host-/i.test(n))) log.warn({ session: cfg.session.cookie_name, csrf: cfg.csrf.cookie_name }, COOKIE_TOSSING_WARNING);
  }
  // While draining, a response ends its keep-alive connection (Connection: close), and connections
  // left idle are closed as they become so: the drain ends with the last in-flight request, not
  // when idle keep-alive sockets time out (the deadline is the bound, not the usual end).
  // The workers and tickers start once it listens (jobs/loops.ts); a stop meanwhile refuses new
  // connections and drains at once, and waits for their start only before closing the services.
  let loops: Promise<void> = Promise.resolve();
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      const drainMs = opts.drainMs ?? DRAIN_MS;
      const started = Date.now();
      draining = true;
      const deadline = setTimeout(() => {
        log.warn({ drainMs }, 'drain deadline reached; closing remaining connections');
        app.server.closeAllConnections();
        appsOrigin?.server.closeAllConnections();
      }, drainMs);
      const idle = setInterval(() => { app.server.closeIdleConnections(); appsOrigin?.server.closeIdleConnections(); }, DRAIN_IDLE_CHECK_MS);
      await Promise.all([app.close(), appsOrigin?.close()]);
      clearTimeout(deadline);
      clearInterval(idle);
      log.info({ drainedMs: Date.now() - started }, 'in-flight requests drained');
      // A dependency that does not answer must not keep a stopping process for good (Redis away
      // while the loops start holds their start until it returns): past each bound it goes on,
      // and what was left ends with the process.
      if (!(await endsWithin(loops.catch(() => undefined), LOOPS_START_WAIT_MS))) log.warn({ ms: LOOPS_START_WAIT_MS }, 'the workers were still starting (a dependency not answering?): closing without them');
      if (!(await endsWithin(services.close(), SERVICES_CLOSE_MS))) log.warn({ ms: SERVICES_CLOSE_MS }, 'closing the services did not end in time (a dependency not answering?): stopping without waiting');
      log.info('stopped');
    })();
    return stopping;
  };
  const server = { app, services, address, stop };
  // Before the loops: their start loads bullmq synchronously, and a SIGTERM with no listener yet
  // would end the process at once instead of draining.
  opts.onListening?.(server);
  loops = startLoops(services);
  try {
    await loops;
  } catch (err) {
    await Promise.all([app.close(), appsOrigin?.close()]).catch(() => undefined);
    await services.close().catch((closeErr: Error) => log.warn({ err: closeErr.message }, 'closing after a failed start failed'));
    throw err;
  }
  // After listening: the check loads the S3 client, which need not delay the start.
  setImmediate(() => { services.s3.checkBucket().catch((err: Error) => log.warn({ err: err.message }, 'object store check failed')); });
  return server;
}

export async function serveCommand(opts: StartOptions = {}): Promise<void> {
  const cfg = loadCheckedConfig();
  // From the moment it listens, a signal drains (before, it ends the process as Node's default does).
  const onListening = (server: RunningServer) => {
    const onSignal = (signal: NodeJS.Signals) => {
      server.services.log.info({ signal }, 'shutting down: draining in-flight requests');
      server.stop().then(() => process.exit(0), (err) => fail(oneLine(err)));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  };
  try {
    await startServer(cfg, { ...opts, onListening });
  } catch (err) {
    fail(oneLine(err, cfg.database.url));
  }
}

/** What `svc serve` checks and starts before it listens: migrations, Redis, the request loops. */
async function startChecks(services: Services, cfg: Config): Promise<void> {
  const log = services.log;
  // PostgreSQL and Redis are asked at once; the database's answer is reported first, and Redis
  // has its 5 s from then (migrations may take longer than that while Redis is still starting).
  const ping = services.redis().ping();
  ping.catch(() => undefined);
  try {
    const { applied } = await migrateToLatest(services.db, cfg.database.url);
    if (applied.length) log.info({ applied }, 'migrations applied');
  } catch (err) {
    await services.close().catch((closeErr: Error) => log.warn({ err: closeErr.message }, 'closing after a failed start failed'));
    throw new Error(oneLine(err, cfg.database.url));
  }
  // The identity provider's signing keys (database round trips the app's onReady hook waits for)
  // are prepared as soon as the schema is known to be current, while the routes are registered.
  void prepareSigningKeys(services);
  await within(ping, REDIS_ANSWER_MS, () => new Error(`cannot reach Redis at ${describeUrl(services.config.redis.url)}: no answer within 5 s`));
  await startRequestLoops(services);
}

/** `host:port` of apps.listen (an IPv6 host in brackets) as fastify's listen options. */
function listenOn(listen: string): { host: string; port: number } {
  const m = /^(.*):([0-9]+)$/.exec(listen)!;
  return { host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}
