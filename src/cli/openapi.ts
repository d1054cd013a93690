// `svc openapi`: builds the route tree without configuration, database or network.
import { buildOpenApiDocument } from '../api/openapi.js';

export async function openapiCommand(): Promise<void> {
  const doc = await buildOpenApiDocument();
  process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
}
