// `svc renderer`: the screenshot service (src/automation/renderer.ts) as its own process, reached
// by the server at automation.renderer_url; it opens pages of automation.public_url only.
import { loadCheckedConfig } from './config.js';
import { createLogging } from '../log/logger.js';
import { startRenderer } from '../automation/renderer.js';
import { fail } from './errors.js';

export interface RendererCommandOptions { host: string; port: string; chromium: string; concurrency: string }

export async function rendererCommand(opts: RendererCommandOptions): Promise<void> {
  const cfg = loadCheckedConfig();
  const logging = createLogging({ filter: cfg.log.filter, json: cfg.log.json });
  const port = Number(opts.port);
  const concurrency = Number(opts.concurrency);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be a port number, not ${opts.port}`);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) fail(`--concurrency must be from 1 to 64, not ${opts.concurrency}`);
  let renderer;
  try {
    renderer = await startRenderer({ publicUrl: cfg.automation.public_url, host: opts.host, port, chromium: opts.chromium, concurrency, log: logging.module('svc::renderer') });
  } catch (err) {
    fail(`the renderer could not start: ${(err as Error).message.split('\n')[0]}`);
  }
  const stop = () => { void renderer.close().then(() => process.exit(0), () => process.exit(1)); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
