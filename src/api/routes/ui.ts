// The browser UI: `GET /` answers ui/index.html, `GET /ui/*` the static assets next to it (one ES
// module, one stylesheet, an icon). No build step, no framework, hash routing in the page, so no
// SPA fallback is needed. The files are read from `<repo>/ui` relative to this module, which is
// the same path from src/api/routes (tsx) and from dist/api/routes (compiled).
//
// Hardening: a strict Content-Security-Policy (no inline script or style anywhere in the UI),
// nosniff, same-origin referrers, no framing; index.html is never cached, assets are revalidated
// with a strong ETag. Asset names are checked against a strict pattern and resolved inside the UI
// folder; anything else (`..`, dot files, encoded separators, unknown types) is a 404 in the
// standard JSON error body.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { errorSchema } from '../schemas.js';
import { notFound } from '../../errors.js';

export const UI_DIR = fileURLToPath(new URL('../../../ui/', import.meta.url));

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
  "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
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
const MAX_ASSET_BYTES = 2 * 1024 * 1024;

interface Asset { body: Buffer; etag: string; type: string; key: string }

/** Resolves an asset name inside the UI folder, or null when it is not a servable name. */
export function resolveAsset(name: string, root = UI_DIR): string | null {
  if (name.length > 200 || !ASSET_NAME.test(name)) return null;
  if (!CONTENT_TYPES[path.extname(name).toLowerCase()]) return null;
  const base = path.resolve(root);
  const file = path.resolve(base, name);
  if (!file.startsWith(base + path.sep)) return null;
  return file;
}

export function uiRoutes(_ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    // Files are re-read when their size or mtime changes, so an edited asset is served at once.
    const cache = new Map<string, Asset>();

    async function load(file: string): Promise<Asset | null> {
      let st;
      try { st = await stat(file); } catch { return null; }
      if (!st.isFile() || st.size > MAX_ASSET_BYTES) return null;
      const key = `${st.size}:${st.mtimeMs}`;
      const hit = cache.get(file);
      if (hit && hit.key === key) return hit;
      let body: Buffer;
      try { body = await readFile(file); } catch { return null; }
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      const asset = { body, etag, key, type: CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream' };
      cache.set(file, asset);
      return asset;
    }

    function securityHeaders(reply: FastifyReply): void {
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'same-origin');
      reply.header('x-frame-options', 'DENY');
      reply.header('cross-origin-opener-policy', 'same-origin');
    }

    function send(req: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string) {
      securityHeaders(reply);
      reply.header('cache-control', cacheControl);
      reply.header('etag', asset.etag);
      reply.header('content-type', asset.type);
      const inm = req.headers['if-none-match'];
      if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === asset.etag)) {
        return reply.status(304).send();
      }
      return reply.status(200).send(asset.body);
    }

    const html = { description: 'The page', content: { 'text/html': { schema: z.string() } } };
    const asset = { description: 'A static asset (script, stylesheet, image)', content: { 'application/octet-stream': { schema: z.string() } } };
    const notModified = z.null().describe('Not modified: If-None-Match matched the ETag');

    app.get('/', {
      schema: { tags: ['ui'], summary: 'The browser UI (sign-in, home, Groups and Members screens)', response: { 200: html, 304: notModified, 404: errorSchema } },
    }, async (req, reply) => {
      const page = await load(path.join(UI_DIR, 'index.html'));
      if (!page) throw notFound('the browser UI is not installed (ui/index.html is missing)');
      return send(req, reply, page, 'no-store');
    });

    app.get('/ui/*', {
      schema: {
        tags: ['ui'], summary: 'Static assets of the browser UI',
        params: z.object({ '*': z.string().max(1024) }),
        response: { 200: asset, 304: notModified, 404: errorSchema },
      },
    }, async (req, reply) => {
      const name = req.params['*'];
      const file = resolveAsset(name);
      const found = file ? await load(file) : null;
      if (!found) throw notFound(`no such asset: /ui/${name.slice(0, 200)}`);
      return send(req, reply, found, found.type.startsWith('text/html') ? 'no-store' : 'no-cache');
    });
  };
}
