// The fastify application: zod schemas on every route, one error shape, metrics, and the route
// families registered as encapsulated plugins.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import type { Logger } from 'pino';
import { serializerCompiler, validatorCompiler, jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { Services } from '../services.js';
import { installErrorHandling } from './errors.js';
import { createMetrics, instrument, type Metrics } from './metrics.js';
import { platformRoutes } from './routes/platform.js';
import type { AppContext } from './context.js';
import { VERSION } from '../version.js';

export interface BuildAppOptions {
  /** Absent for `svc openapi`: routes must not touch services while being registered. */
  services?: Services;
  logger?: Logger;
}

export async function buildApp(opts: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger | undefined,
    trustProxy: false,
    bodyLimit: 1024 * 1024,
    // Keep-alive sockets that are idle are closed at shutdown; busy ones are drained.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'svc', version: VERSION, description: 'Control plane of a multi-workspace data platform' },
    },
    transform: jsonSchemaTransform,
  });

  const metrics: Metrics = createMetrics();
  instrument(app, metrics);
  const ctx: AppContext = {
    metrics,
    services: () => {
      if (!opts.services) throw new Error('services are not available in this build of the app');
      return opts.services;
    },
  };

  await app.register(platformRoutes(ctx));
  return app;
}
