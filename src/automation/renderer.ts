// `svc renderer`: the screenshot service at automation.renderer_url (docs/alerts.md "The
// renderer"), as the Grafana image renderer is for Grafana: Chromium driven by playwright-core.
//
//   POST /render  {"path": "/ui/...", "cookie": {"name", "value"}, "width", "height", "timeout_ms"}
//                 -> 200 image/png
//   GET  /healthz -> 200
//
// It only ever opens pages of the service: the page is `automation.public_url` + path (a path
// that would leave that origin is refused), and every request of the page to another origin is
// aborted, so the renderer cannot be used to reach anything else. The service's short-lived
// session token arrives as a cookie and goes into the browser's cookie jar for public_url only
// (HttpOnly): it is never in the URL, never readable by the page, never logged, so it cannot
// appear in the image. Each render has its own browser context (nothing shared between renders)
// and a deadline; past it the context is closed and the answer is 504.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Browser } from 'playwright-core';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-dev-shm-usage'];
export const MAX_RENDER_MS = 60_000;
const MAX_BODY_BYTES = 16 * 1024;

export interface RendererOptions {
  /** automation.public_url: the only origin pages are opened on. */
  publicUrl: string;
  host: string;
  port: number;
  chromium: string;
  /** Renders at once; more wait (up to `concurrency * 4`), beyond that 503. */
  concurrency: number;
  log: Logger;
}

export interface RenderRequest { path: string; cookie?: { name: string; value: string }; width: number; height: number; timeoutMs: number }

class HttpError extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

/** Checks a render request body; throws HttpError(400) naming the problem. */
export function parseRenderRequest(body: unknown, publicUrl: string): RenderRequest & { url: URL } {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const bad = (m: string) => new HttpError(400, m);
  if (typeof b.path !== 'string' || !b.path.startsWith('/') || b.path.startsWith('//') || b.path.length > 2048) throw bad('path must be a path starting with a single /');
  const base = new URL(publicUrl);
  const url = new URL(b.path, base);
  if (url.origin !== base.origin) throw bad('path must stay on automation.public_url');
  const int = (v: unknown, def: number, min: number, max: number, name: string) => {
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw bad(`${name} must be an integer from ${min} to ${max}`);
    return v;
  };
  let cookie: RenderRequest['cookie'];
  if (b.cookie !== undefined) {
    const c = b.cookie as Record<string, unknown>;
    if (typeof c?.name !== 'string' || typeof c.value !== 'string' || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/.test(c.name) || !/^[\x21-\x7e]{1,4096}$/.test(c.value)) throw bad('cookie must be {"name", "value"} of a valid cookie');
    cookie = { name: c.name, value: c.value };
  }
  return {
    path: b.path, url, cookie,
    width: int(b.width, 1280, 320, 3840, 'width'),
    height: int(b.height, 800, 200, 4000, 'height'),
    timeoutMs: int(b.timeout_ms, 30_000, 1_000, MAX_RENDER_MS, 'timeout_ms'),
  };
}

export interface Renderer { url: string; close(): Promise<void> }

export async function startRenderer(opts: RendererOptions): Promise<Renderer> {
  const { chromium } = await import('playwright-core');
  const origin = new URL(opts.publicUrl).origin;
  let browser: Promise<Browser> | undefined;
  const launch = () => (browser ??= chromium.launch({ executablePath: opts.chromium, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 })
    .catch((err: Error) => { browser = undefined; throw err; }));
  let running = 0;
  const waiting: Array<() => void> = [];
  const acquire = async () => {
    if (running >= opts.concurrency) {
      if (waiting.length >= opts.concurrency * 4) throw new HttpError(503, 'the renderer is busy');
      await new Promise<void>((r) => waiting.push(r));
    }
    running++;
  };
  const release = () => { running--; waiting.shift()?.(); };

  async function render(req: RenderRequest & { url: URL }): Promise<Buffer> {
    const b = await launch();
    const context = await b.newContext({ viewport: { width: req.width, height: req.height }, locale: 'en-GB', timezoneId: 'UTC', serviceWorkers: 'block' });
    let timer: NodeJS.Timeout | undefined;
    try {
      if (req.cookie) await context.addCookies([{ name: req.cookie.name, value: req.cookie.value, url: origin, httpOnly: true, sameSite: 'Lax' }]);
      // The page may load from the service only.
      await context.route('**/*', (route) => (new URL(route.request().url()).origin === origin ? route.continue() : route.abort('blockedbyclient')));
      const page = await context.newPage();
      const work = (async () => {
        const res = await page.goto(req.url.toString(), { waitUntil: 'networkidle', timeout: req.timeoutMs });
        if (!res) throw new HttpError(502, 'the page did not load');
        return page.screenshot({ type: 'png', fullPage: false, timeout: req.timeoutMs });
      })();
      const deadline = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new HttpError(504, `the page did not render within ${req.timeoutMs} ms`)), req.timeoutMs); });
      return await Promise.race([work, deadline]).catch((err: Error) => {
        work.catch(() => undefined); // the context is closed below; its late rejection is expected
        if (err instanceof HttpError) throw err;
        if (/Timeout/i.test(err.name) || /timeout/i.test(err.message)) throw new HttpError(504, `the page did not render within ${req.timeoutMs} ms`);
        throw new HttpError(502, `the page could not be rendered: ${err.message.split('\n')[0]!.slice(0, 300)}`);
      });
    } finally {
      clearTimeout(timer);
      await context.close().catch((err: Error) => opts.log.warn({ err: err.message }, 'closing a render context failed'));
    }
  }

  const server = http.createServer((req, res) => {
    const answer = (status: number, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: status === 504 ? 'timeout' : status === 503 ? 'unavailable' : status >= 500 ? 'render_failed' : 'bad_request', message }));
    };
    if (req.method === 'GET' && req.url === '/healthz') { res.end('ok'); return; }
    if (req.method !== 'POST' || req.url !== '/render') { answer(404, 'POST /render or GET /healthz'); return; }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) { answer(413, `the body is larger than ${MAX_BODY_BYTES} bytes`); req.destroy(); return; }
      chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return;
      const started = Date.now();
      void (async () => {
        let parsed: RenderRequest & { url: URL };
        try {
          parsed = parseRenderRequest(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'), opts.publicUrl);
        } catch (err) {
          answer(400, err instanceof HttpError ? err.message : 'the body must be JSON');
          return;
        }
        try {
          await acquire();
        } catch (err) {
          answer((err as HttpError).status ?? 503, (err as Error).message);
          return;
        }
        try {
          const png = await render(parsed);
          res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
          res.end(png);
          opts.log.info({ path: parsed.url.pathname, ms: Date.now() - started, bytes: png.length }, 'rendered');
        } catch (err) {
          const status = err instanceof HttpError ? err.status : 502;
          opts.log.warn({ path: parsed.url.pathname, status, err: (err as Error).message }, 'render failed');
          answer(status, err instanceof HttpError ? err.message : 'the page could not be rendered');
        } finally {
          release();
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(opts.port, opts.host, () => resolve()); });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  opts.log.info({ url, public_url: opts.publicUrl, chromium: opts.chromium }, 'renderer listening');
  return {
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      if (browser) await (await browser.catch(() => undefined))?.close();
    },
  };
}
