// Placeholder: filled in by the oidc capability.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';

export function oidcRoutes(_ctx: AppContext): FastifyPluginAsyncZod {
  return async () => {};
}
