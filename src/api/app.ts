// The fastify application: zod schemas on every route, one error shape, metrics, and the route
// families registered as encapsulated plugins.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { serializerCompiler, validatorCompiler, jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { Services } from '../services.js';
import { installErrorHandling } from './errors.js';
import { dependencyPorts } from '../errors.js';
import { finishDocument } from './openapi-doc.js';
import { clientErrorHandler, frameworkErrors, installInputGuard } from './input-guard.js';
import { AccessLog } from './access-log.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { instrument } from './instrument.js';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import { platformRoutes } from './routes/platform.js';
import { authRoutes } from './routes/auth.js';
import { meRoutes } from './routes/me.js';
import { adminRoutes } from './routes/admin.js';
import { workspaceRoutes } from './routes/workspaces.js';
import { oidcRoutes } from './routes/oidc.js';
import { machinesRoutes } from './routes/machines.js';
import { uiRoutes } from './routes/ui.js';
import { workflowRoutes } from './routes/workflows.js';
import { automationRoutes } from './routes/automations.js';
import { webhooksRoutes } from './routes/webhooks.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { queryRoutes } from './routes/queries.js';
import { appRoutes } from './routes/apps.js';
import { engineRoutes } from './routes/engines.js';
import { catalogBrowseRoutes } from './routes/catalog-browse.js';
import { dataApiRoutes } from './routes/data-api.js';
import { dataApiConsumerRoutes } from './routes/data-api-consumer.js';
import { installSessionLayer } from './plugins/auth.js';
import type { AppContext } from './context.js';
import { VERSION } from '../version.js';

/** The route families, registered in this order. */
const ROUTE_FAMILIES = [
  platformRoutes, authRoutes, meRoutes, adminRoutes, workspaceRoutes, oidcRoutes, machinesRoutes, workflowRoutes,
  automationRoutes, webhooksRoutes, dashboardRoutes, queryRoutes, appRoutes, engineRoutes, catalogBrowseRoutes,
  dataApiRoutes, dataApiConsumerRoutes, uiRoutes,
];

export interface BuildAppOptions {
  /** Absent for `svc openapi`: routes must not touch services while being registered. */
  services?: Services;
  logger?: Logger;
  /**
   * Collect the routes for `app.swagger()` (default true: `svc openapi`, tests). `svc serve` answers
   * no document and leaves the plugin out: it and yaml under it are about 90 modules at every start.
   */
  document?: boolean;
}

export async function buildApp(opts: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger | undefined,
    trustProxy: false,
    logController: new AccessLog(opts.services?.logging.access),
    bodyLimit: 1024 * 1024,
    // Keep-alive sockets that are idle are closed at shutdown; busy ones are drained.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    frameworkErrors,
    clientErrorHandler,
    // zod's compilers from the start: set afterwards, fastify would first build its default ones
    // (ajv and fast-json-stringify, loaded at every start for no route).
    // (fastify types these factories for ajv's compilers; zod's are the same functions for it.)
    schemaController: { compilersFactory: { buildValidator: (() => validatorCompiler) as never, buildSerializer: (() => serializerCompiler) as never } },
  });
  installErrorHandling(app, dependencyPorts({ database: opts.services?.config.database.url, redis: opts.services?.config.redis.url }));

  if (opts.document !== false) await app.register((await import('@fastify/swagger')).default, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'svc', version: VERSION, description: 'Control plane of a multi-workspace data platform' },
    },
    transform: jsonSchemaTransform,
    transformObject: finishDocument as never,
  });

  const metrics: Metrics = opts.services?.metrics ?? createMetrics();
  instrument(app, metrics);
  const ctx: AppContext = {
    metrics,
    services: () => {
      if (!opts.services) throw new Error('services are not available in this build of the app');
      return opts.services;
    },
  };

  await app.register(fastifyCookie);
  await app.register(fastifyFormbody);
  // After cookie parsing (cookies are checked too), before the session layer reads them.
  installInputGuard(app);
  installSessionLayer(app, ctx);

  for (const family of ROUTE_FAMILIES) {
    // Named: fastify's plugin loader names an anonymous plugin by splitting its source into lines.
    await app.register(Object.defineProperty(family(ctx), 'name', { value: family.name }));
    // Back to the event loop between families: `svc serve` builds the app while its start-up
    // checks wait on PostgreSQL and Redis, whose answers are taken here (src/cli/serve.ts).
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return app;
}
