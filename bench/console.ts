// Issue 17 figure: the console's first load beside the UI it replaced, same run, loopback, in
// Debian's Chromium (playwright-core). The old UI (bench/baseline-ui/: the hand-written app.js,
// styles.css and index.html of main before the rebuild, served with the headers its route sent)
// and the new console (ui/dist, served by `svc serve` itself) are loaded through the same
// loopback front server, so both pay the same extra hop for their API calls.
//
// Figures per page, median of RUNS alternating cold loads (fresh browser context, empty cache):
//   transferred: response headers + bodies as sent on the wire (compressed where compressed);
//   interactive: navigation start to the moment the page can be used: the sign-in form's email
//                field takes focus (signed out), the workspaces table is shown (signed in).
// and the repeat visit (same context, warm cache) for the signed-in home.
import http from 'node:http';
import { readFile, readdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { createTestDatabase } from '../test/helpers/db.js';
import { serviceEnv, spawnSvc, runSvc, waitExit } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';
import { launchBrowser } from '../test/helpers/browser.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const BASELINE = fileURLToPath(new URL('./baseline-ui/', import.meta.url));
const OLD_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.html': 'text/html; charset=utf-8' };
const ADMIN = { email: 'bench@example.test', password: 'bench-password-1' };

/** A loopback front server: the old UI's files (as its route served them) or nothing, and every
 * other request passed through to svc unchanged. */
async function frontServer(svcPort: number, serveOldUi: boolean): Promise<{ port: number; close(): Promise<void> }> {
  const files = new Map<string, { body: Buffer; etag: string; type: string }>();
  if (serveOldUi) {
    for (const f of ['index.html', 'app.js', 'styles.css', 'favicon.svg']) {
      const body = await readFile(path.join(BASELINE, f));
      files.set(f === 'index.html' ? '/' : `/ui/${f}`, { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, type: TYPES[path.extname(f)] });
    }
  }
  const server = http.createServer((req, res) => {
    const file = files.get((req.url ?? '/').split('?')[0]);
    if (file && req.method === 'GET') {
      res.setHeader('content-security-policy', OLD_CSP);
      res.setHeader('x-content-type-options', 'nosniff');
      res.setHeader('referrer-policy', 'same-origin');
      res.setHeader('x-frame-options', 'DENY');
      res.setHeader('cross-origin-opener-policy', 'same-origin');
      res.setHeader('cache-control', req.url === '/' ? 'no-store' : 'no-cache');
      res.setHeader('etag', file.etag);
      res.setHeader('content-type', file.type);
      if (req.headers['if-none-match'] === file.etag) { res.statusCode = 304; res.end(); return; }
      res.end(file.body);
      return;
    }
    const up = http.request({ host: '127.0.0.1', port: svcPort, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', (err) => { res.statusCode = 502; res.end(String(err.message)); });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** Records, inside the page, when it became usable (runs before the page's own scripts). */
const READY_PROBE = `(() => {
  const mark = (name) => { if (!window.__ready?.[name]) (window.__ready ??= {})[name] = performance.now(); };
  document.addEventListener('focusin', (e) => { if (e.target && e.target.id === 'email') mark('signin'); }, true);
  new MutationObserver(() => { if (document.querySelector('#workspaces tbody tr')) mark('home'); })
    .observe(document, { subtree: true, childList: true });
})();`;

interface Load { bytes: number; requests: number; ms: number }

async function measure(page: Page, url: string, ready: 'signin' | 'home'): Promise<Load> {
  let bytes = 0; let requests = 0;
  const pending: Promise<void>[] = [];
  const onDone = (r: import('playwright-core').Request) => {
    pending.push(r.sizes().then((s) => { bytes += s.responseHeadersSize + s.responseBodySize; requests++; }, () => undefined));
  };
  page.on('requestfinished', onDone);
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction((name) => Boolean((window as unknown as { __ready?: Record<string, number> }).__ready?.[name]), ready);
  await page.waitForLoadState('networkidle');
  const ms = await page.evaluate((name) => (window as unknown as { __ready: Record<string, number> }).__ready[name], ready);
  page.off('requestfinished', onDone);
  await Promise.all(pending);
  return { bytes, requests, ms };
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function main() {
  const db = await createTestDatabase('svc_bench_console');
  const port = await freePort();
  const env = serviceEnv(db.url, { endpoint: 'http://127.0.0.1:1', accessKey: 'ak', secretKey: 'sk' }, { SVC_REDIS__URL: redisUrl('bench'),
    SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_LOG__FILTER: 'warn',
    SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password, SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS: '1000',
  });
  const init = await runSvc(['init'], { env });
  if (init.code !== 0) throw new Error(init.stderr);
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_LOG__FILTER: 'warn,svc=info' }, ready: /"msg":"listening"/ });
  const fronts = { old: await frontServer(port, true), new: await frontServer(port, false) };
  const browser = await launchBrowser();
  try {
    const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN),
    });
    if (login.status !== 200) throw new Error(`login ${login.status}`);
    const session = login.headers.getSetCookie().map((c) => { const [nv] = c.split(';'); const i = nv.indexOf('='); return { name: nv.slice(0, i), value: nv.slice(i + 1) }; });

    const results: Record<'old' | 'new', Record<'signin' | 'home' | 'repeat', Load[]>> = {
      old: { signin: [], home: [], repeat: [] }, new: { signin: [], home: [], repeat: [] },
    };
    for (let run = 0; run < RUNS + 1; run++) {
      for (const which of (run % 2 ? ['new', 'old'] : ['old', 'new']) as Array<'old' | 'new'>) {
        const base = `http://127.0.0.1:${fronts[which].port}`;
        const a = await browser.newPage();
        await a.context.addInitScript(READY_PROBE);
        const signin = await measure(a.page, `${base}/`, 'signin');
        await a.context.close();
        const b = await browser.newPage();
        await b.context.addInitScript(READY_PROBE);
        await b.context.addCookies(session.map((c) => ({ ...c, domain: '127.0.0.1', path: '/' })));
        const home = await measure(b.page, `${base}/`, 'home');
        const repeat = await measure(b.page, `${base}/`, 'home');
        await b.context.close();
        if (run === 0) continue; // warm-up: the server's first answers and Chromium's first start
        results[which].signin.push(signin); results[which].home.push(home); results[which].repeat.push(repeat);
      }
    }

    // What each UI ships, uncompressed on disk (the old UI was sent as is; the new one is sent
    // brotli-compressed to browsers that accept it, as Chromium does).
    const size = async (dir: string, names: string[]) => (await Promise.all(names.map((n) => readFile(path.join(dir, n)).then((b) => b.length)))).reduce((a, b) => a + b, 0);
    const dist = fileURLToPath(new URL('../ui/dist/', import.meta.url));
    const built = (await readdir(path.join(dist, 'assets'))).filter((f) => /\.(js|css)$/.test(f)).map((f) => `assets/${f}`);
    const oldRaw = await size(BASELINE, ['index.html', 'app.js', 'styles.css']);
    const newRaw = await size(dist, ['index.html', ...built]);
    // Chunks under 1 KiB are not precompressed (ui/vite.config.ts): they are sent as they are.
    const newBr = (await Promise.all(built.map((f) => readFile(path.join(dist, `${f}.br`)).catch(() => readFile(path.join(dist, f))).then((b) => b.length)))).reduce((a, b) => a + b, 0);
    const kb = (n: number) => `${(n / 1024).toFixed(1).padStart(6)} KiB`;
    const ms = (n: number) => `${n.toFixed(0).padStart(5)} ms`;
    console.log(`console first load: Chromium on loopback, median of ${RUNS} alternating cold loads each`);
    console.log(`built (html+js+css, uncompressed): old ${(oldRaw / 1024).toFixed(1)} KiB, new ${(newRaw / 1024).toFixed(1)} KiB in all chunks (as brotli: ${(newBr / 1024).toFixed(1)} KiB; the editor chunks load only with an editor)`);
    console.log('page                      UI       transferred  requests  interactive');
    for (const page of ['signin', 'home', 'repeat'] as const) {
      const label = { signin: 'sign-in (cold)', home: 'home, signed in (cold)', repeat: 'home, repeat visit' }[page];
      for (const which of ['old', 'new'] as const) {
        const r = results[which][page];
        console.log(`${label.padEnd(26)}${which.padEnd(8)} ${kb(median(r.map((x) => x.bytes)))}  ${String(median(r.map((x) => x.requests))).padStart(8)}  ${ms(median(r.map((x) => x.ms)))}`);
      }
      const o = results.old[page]; const n = results.new[page];
      console.log(`${''.padEnd(26)}new:old  ${(median(n.map((x) => x.bytes)) / median(o.map((x) => x.bytes))).toFixed(2).padStart(10)}x  ${''.padStart(8)}  ${(median(n.map((x) => x.ms)) / median(o.map((x) => x.ms))).toFixed(2).padStart(7)}x`);
    }
  } finally {
    await browser.close();
    await fronts.old.close(); await fronts.new.close();
    child.kill('SIGTERM');
    await waitExit(child);
    await db.drop();
  }
}

await main();
