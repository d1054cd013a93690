// Debian's Chromium driven by playwright-core (no browser download: `bash scripts/chromium.sh`
// installs /usr/bin/chromium). `chromium.launch` starts the browser on a fresh temporary
// user-data-dir that Playwright creates and deletes on close (it refuses a --user-data-dir
// argument); each context is an isolated session (own cookies and storage), so one test can run
// several people side by side.
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const RESULTS_DIR = fileURLToPath(new URL('../../test-results/', import.meta.url));

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface TestBrowser {
  browser: Browser;
  /**
   * A new isolated session (cookies, storage) with a page, recording console errors and the
   * requests that failed (`failed`: method, URL and Chromium's reason, for a failure's message).
   */
  newPage(): Promise<{ context: BrowserContext; page: Page; errors: string[]; failed: string[] }>;
  /** Saves a full-page screenshot as test-results/ui-<name>.png and returns its path. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

export async function launchBrowser(opts: { viewport?: { width: number; height: number } } = {}): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run \`bash scripts/chromium.sh\` (as root) first`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
  });
  await mkdir(RESULTS_DIR, { recursive: true });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async newPage() {
      const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1200, height: 820 }, locale: 'en-GB', timezoneId: 'UTC' });
      contexts.push(context);
      context.setDefaultTimeout(15_000);
      // tsx (esbuild) names arrow functions with a `__name` helper, also inside callbacks that
      // page.evaluate serialises into the page, where the helper does not exist.
      await context.addInitScript('globalThis.__name = (f) => f;');
      const page = await context.newPage();
      const errors: string[] = [];
      // Failed fetches (the expected 401 of /api/me while signed out) are logged by Chromium as
      // "Failed to load resource"; everything else at error level (CSP violations, exceptions)
      // is a defect of the page.
      page.on('console', (m: ConsoleMessage) => {
        if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(`${page.url()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => errors.push(`${page.url()}: uncaught ${e.message}`));
      const failed: string[] = [];
      page.on('requestfailed', (r) => { failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`); });
      return { context, page, errors, failed };
    },
    async screenshot(page, name) {
      const file = path.join(RESULTS_DIR, `ui-${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close().catch(() => {});
    },
  };
}
