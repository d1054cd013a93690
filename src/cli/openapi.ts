// `svc openapi`: builds the route tree without configuration, database or network. The build
// writes the document beside the compiled code (dist/openapi.json, scripts/build.sh); while it is
// newer than every compiled file it is the answer, so the command loads no route module at all.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const PREBUILT = fileURLToPath(new URL('../openapi.json', import.meta.url));

/** The prebuilt document, or null when it is missing or older than a file it was built from. */
export function prebuiltDocument(file = PREBUILT): string | null {
  let built: number;
  try { built = statSync(file).mtimeMs; } catch { return null; }
  const dir = path.dirname(file);
  for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    // the build's own bookkeeping (.tsbuildinfo, .build-stamp) and source maps say nothing of routes
    if (f === path.basename(file) || f.endsWith('.map') || path.basename(f).startsWith('.')) continue;
    const st = statSync(path.join(dir, f));
    if (st.isFile() && st.mtimeMs > built) return null;
  }
  return readFileSync(file, 'utf8');
}

export async function openapiCommand(): Promise<void> {
  const text = prebuiltDocument();
  if (text !== null) {
    process.stdout.write(text);
    return;
  }
  const { buildOpenApiDocument } = await import('../api/openapi.js');
  process.stdout.write(JSON.stringify(await buildOpenApiDocument(), null, 2) + '\n');
}
