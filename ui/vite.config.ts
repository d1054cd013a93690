// The console's build: Preact + TypeScript through Vite (Rolldown), hashed files under
// ui/dist/assets served by the service at /ui/assets/* (src/api/routes/ui.ts). No inline script
// or style is emitted (the page runs under `script-src 'self'; style-src 'self'`), and every
// text asset gets .br and .gz siblings at build time so @fastify/static can send them
// pre-compressed without compressing on each request.
import { defineConfig, type Plugin } from 'vite';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';

function precompress(): Plugin {
  return {
    name: 'svc-precompress',
    apply: 'build',
    generateBundle(_opts, bundle) {
      for (const [name, out] of Object.entries(bundle)) {
        if (!/\.(js|css|svg|json|txt)$/.test(name)) continue;
        const src = Buffer.from(out.type === 'chunk' ? out.code : out.source);
        if (src.length < 1024) continue;
        this.emitFile({ type: 'asset', fileName: `${name}.br`, source: brotliCompressSync(src, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }) });
        this.emitFile({ type: 'asset', fileName: `${name}.gz`, source: gzipSync(src, { level: 9 }) });
      }
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
    // No polyfill: every browser the console supports has module preload; the polyfill would be
    // inlined code that the CSP refuses anyway.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URLs into scripts; files are cached by their hash.
    assetsInlineLimit: 0,
  },
  plugins: [precompress()],
});
