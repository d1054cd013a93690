// The console's build: Preact + TypeScript through Vite (Rolldown), hashed files under
// ui/dist/assets served by the service at /ui/assets/* (src/api/routes/ui.ts). No inline script
// or style is emitted (the page runs under `script-src 'self'; style-src 'self'`), and every
// text asset gets .br and .gz siblings at build time so @fastify/static can send them
// pre-compressed without compressing on each request.
import { defineConfig, type Plugin } from 'vite';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

function precompress(): Plugin {
  return {
    name: 'svc-precompress',
    apply: 'build',
    enforce: 'post',
    // After every other plugin has finished the chunks (Vite replaces its preload markers late),
    // compress what was written.
    async writeBundle(opts, bundle) {
      const dir = opts.dir!;
      await Promise.all(Object.keys(bundle).filter((name) => /\.(js|css|svg|json|txt)$/.test(name)).map(async (name) => {
        const src = await readFile(path.join(dir, name));
        if (src.length < 1024) return;
        await writeFile(path.join(dir, `${name}.br`), brotliCompressSync(src, { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } }));
        await writeFile(path.join(dir, `${name}.gz`), gzipSync(src, { level: 9 }));
      }));
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  base: '/ui/',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    // Never inline assets as data: URLs into scripts; files are cached by their hash.
    assetsInlineLimit: 0,
  },
  plugins: [precompress()],
});
