import pino from 'pino';
import { buildApp } from './app.js';

/** The aggregated OpenAPI 3.1 document of every route family. */
export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const app = await buildApp({ logger: pino({ level: 'silent' }) });
  await app.ready();
  const doc = app.swagger() as unknown as Record<string, unknown>;
  await app.close();
  return doc;
}
