// The browser console: `GET /` answers the built ui/dist/index.html, `GET /ui/*` the built assets
// next to it (Vite output with content-hashed names under assets/, plus the files of ui/public).
// `scripts/build-ui.sh` (part of `npm run build`) writes ui/dist; the folder is found relative to
// this module, the same path from src/api/routes (tsx) and from dist/api/routes (compiled).
//
// Files are sent by @fastify/static (streams, Range, ETag/Last-Modified, 304), pre-compressed
// `.br`/`.gz` siblings when the browser accepts them. Hashed assets never change under their
// name, so they are cached for a year as immutable; index.html is never cached, so a new build
// is picked up on the next load; the other files (favicon) are revalidated.
//
// Hardening: a strict Content-Security-Policy (no inline script or style anywhere in the UI),
// nosniff, same-origin referrers, no framing. Asset names are checked against a strict pattern
// and resolved inside the UI folder before @fastify/static sees them; anything else (`..`, dot
// files, encoded separators, unknown types, missing files) is a 404 in the standard JSON body.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { z } from 'zod';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { errorSchema } from '../schemas.js';
import { notFound } from '../../errors.js';

export const UI_DIR = fileURLToPath(new URL('../../../ui/dist/', import.meta.url));

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
  "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** Path segments of letters, digits, `_`, `-` and `.`, never starting with a dot (no `..`, no dot files). */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(?:\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;
/** Vite's output names under assets/: `<name>-<8+ char hash>.<ext>`. */
const HASHED = /^assets\/[A-Za-z0-9_.-]+-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/;

/** Resolves an asset name inside the UI folder, or null when it is not a servable name. */
export function resolveAsset(name: string, root = UI_DIR): string | null {
  if (name.length > 200 || !ASSET_NAME.test(name)) return null;
  if (!CONTENT_TYPES[path.extname(name).toLowerCase()]) return null;
  const base = path.resolve(root);
  const file = path.resolve(base, name);
  if (!file.startsWith(base + path.sep)) return null;
  return file;
}

async function isFile(file: string): Promise<boolean> {
  try { return (await stat(file)).isFile(); } catch { return false; }
}

export function uiRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    // serve: false: only the two routes below send files, after their own checks.
    await app.register(fastifyStatic, {
      root: UI_DIR, serve: false, preCompressed: true, cacheControl: false, contentType: false, etag: true, lastModified: true, dotfiles: 'deny',
    });

    function securityHeaders(reply: FastifyReply): void {
      // The console frames data apps (docs/apps.md): their origin, and only it, may be a frame.
      const apps = ctx.services().config.apps.origin;
      reply.header('content-security-policy', apps ? `${CONTENT_SECURITY_POLICY}; frame-src ${apps}` : CONTENT_SECURITY_POLICY);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'same-origin');
      reply.header('x-frame-options', 'DENY');
      reply.header('cross-origin-opener-policy', 'same-origin');
    }

    const html = { description: 'The page', content: { 'text/html': { schema: z.string() } } };
    const asset = { description: 'A static asset (script, stylesheet, image)', content: { 'application/octet-stream': { schema: z.string() } } };
    const notModified = z.null().describe('Not modified: If-None-Match matched the ETag');

    app.get('/', {
      schema: { tags: ['ui'], summary: 'The browser console (sign-in, home, people administration, workflows)', response: { 200: html, 304: notModified, 404: errorSchema } },
    }, async (_req, reply) => {
      if (!(await isFile(path.join(UI_DIR, 'index.html')))) {
        throw notFound('the browser console is not built (ui/dist/index.html is missing: run npm run build)');
      }
      securityHeaders(reply);
      reply.header('cache-control', 'no-store');
      reply.type('text/html; charset=utf-8');
      return reply.sendFile('index.html');
    });

    app.get('/ui/*', {
      // Every path that is not an asset (NUL and traversal included) gets the same 404; no
      // parameter of this route reaches the database.
      config: { inputGuard: false },
      schema: {
        tags: ['ui'], summary: 'Static assets of the browser console (content-hashed names under assets/)',
        params: z.object({ '*': z.string().max(1024) }),
        response: { 200: asset, 304: notModified, 404: errorSchema },
      },
    }, async (req, reply) => {
      const name = req.params['*'];
      const file = resolveAsset(name);
      if (!file || name === 'index.html' || !(await isFile(file))) throw notFound(`no such asset: /ui/${name.slice(0, 200)}`);
      securityHeaders(reply);
      reply.header('cache-control', HASHED.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache');
      reply.type(CONTENT_TYPES[path.extname(name).toLowerCase()]);
      return reply.sendFile(name);
    });
  };
}
