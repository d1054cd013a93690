// Placeholder: filled in by the ui capability.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';

export function uiRoutes(_ctx: AppContext): FastifyPluginAsyncZod {
  return async () => {};
}
