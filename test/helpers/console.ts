// The console's browser tests: a real listening `svc serve` (startServer) on a free loopback port
// with its own database and break-glass administrator, and signing in through the console's form.
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { loadConfig, startupChecks } from '../../src/config/index.js';
import { startServer, type RunningServer } from '../../src/cli/serve.js';
import { initAdministrator } from '../../src/bootstrap/init.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { freePort } from './net.js';

export const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

export interface Svc { server: RunningServer; db: TestDatabase; base: string; port: number; close(): Promise<void> }

/** A real listening server on a free loopback port with its own database and administrator. */
export async function startSvc(env: Record<string, string> = {}, port?: number): Promise<Svc> {
  const db = await createTestDatabase('svc_ui');
  port ??= await freePort();
  const cwd = await mkdtemp(path.join(tmpdir(), 'svc-ui-'));
  const cfg = loadConfig({
    cwd,
    env: {
      SVC_DATABASE__URL: db.url, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk',
      SVC_LOG__FILTER: 'error', SVC_LOG__JSON: 'true',
      SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port),
      ...env,
    },
  });
  startupChecks(cfg);
  // Its own BullMQ prefix: console files run side by side, each with a worker on the same Redis,
  // and on the shared default prefix one server's worker took the other's jobs (executions of a
  // database it does not have never ran).
  const server = await startServer(cfg, { drainMs: 1_000, queuePrefix: `svc-ui-${randomBytes(4).toString('hex')}` });
  await initAdministrator(server.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  return {
    server, db, port, base: `http://127.0.0.1:${port}`,
    async close() { await server.stop(); await db.drop(); },
  };
}

/** Signs in through the console's local form, as a person types it. */
export async function signIn(page: Page, base: string, who = ADMIN, hash = ''): Promise<void> {
  await page.goto(`${base}/${hash}`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByLabel('Password').press('Enter');
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Replaces a CodeMirror editor's text as a person pasting it (typing line by line would auto-indent). */
export async function pasteInto(page: Page, selector: string, text: string): Promise<void> {
  const editor = page.locator(selector);
  await editor.click();
  await page.keyboard.press('Control+A');
  await editor.evaluate((el, t) => {
    const data = new DataTransfer();
    data.setData('text/plain', t);
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}

/** Clicks a download link and returns what the browser downloaded, as text. */
export async function downloadText(page: Page, link: Locator): Promise<{ name: string; text: string }> {
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  const text = await new Promise<string>((resolve, reject) => {
    void download.createReadStream().then((s) => { let t = ''; s.setEncoding('utf8'); s.on('data', (d) => { t += d; }); s.on('end', () => resolve(t)); s.on('error', reject); }, reject);
  });
  return { name: download.suggestedFilename(), text };
}
