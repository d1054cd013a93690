// Placeholder: filled in by the machines capability.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';

export function machinesRoutes(_ctx: AppContext): FastifyPluginAsyncZod {
  return async () => {};
}
