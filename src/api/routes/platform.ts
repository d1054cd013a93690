// Platform routes: liveness, readiness (the database answers) and Prometheus metrics.
// All unauthenticated; keep them off the internet (SPEC 5.3).
import { sql } from 'kysely';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';

const READY_TIMEOUT_MS = 2_000;

export function platformRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/healthz', {
      schema: { tags: ['platform'], summary: 'The process is up', response: { 200: z.object({ status: z.literal('ok') }) } },
      logLevel: 'warn',
      // no session layer: a cookie sent along must not make liveness or readiness touch the database
      config: { session: false },
    }, async () => ({ status: 'ok' as const }));

    app.get('/readyz', {
      schema: {
        tags: ['platform'], summary: 'The database answers',
        response: {
          200: z.object({ status: z.literal('ok'), db: z.literal('up') }),
          503: z.object({ status: z.literal('unavailable'), db: z.literal('down') }),
        },
      },
      logLevel: 'warn',
      // no session layer: a cookie sent along must not make liveness or readiness touch the database
      config: { session: false },
    }, async (_req, reply) => {
      const up = await databaseAnswers(ctx);
      if (up) return { status: 'ok' as const, db: 'up' as const };
      return reply.status(503).send({ status: 'unavailable' as const, db: 'down' as const });
    });

    app.get('/metrics', {
      schema: { tags: ['platform'], summary: 'Metrics in Prometheus text exposition format', response: { 200: z.string() } },
      logLevel: 'warn',
      // no session layer: a cookie sent along must not make liveness or readiness touch the database
      config: { session: false },
    }, async (_req, reply) => {
      const { registry } = ctx.metrics;
      reply.header('content-type', registry.contentType);
      return registry.metrics();
    });
  };
}

async function databaseAnswers(ctx: AppContext): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const probe = sql`SELECT 1`.execute(ctx.services().db).then(() => true, () => false);
    const timeout = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS); });
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
