// The Apps screen's browser tests (test/console-apps*.test.ts): the service and its apps listener
// on two ports of localhost (two origins, one site: see console-apps.test.ts for why), calls made
// from the console page as the console makes them, and the iframe once it redeemed its ticket.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Frame, Page } from 'playwright-core';
import { storageEnv as s3StorageEnv, type TestS3 } from './s3.js';
import { freePort } from './net.js';

export const storageEnv = (s3: TestS3): Record<string, string> => ({
  ...s3StorageEnv(s3), SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64'),
});

/** Free ports for the service and the apps listener, their localhost origins and the apps.* variables. */
export async function appsEnv(): Promise<{ port: number; base: string; apps: string; env: Record<string, string> }> {
  const port = await freePort();
  const appsPort = await freePort();
  const base = `http://localhost:${port}`;
  const apps = `http://localhost:${appsPort}`;
  return { port, base, apps, env: { SVC_APPS__ORIGIN: apps, SVC_APPS__SERVICE_ORIGIN: base, SVC_APPS__LISTEN: `127.0.0.1:${appsPort}` } };
}

/** Replaces an editor's text as a person pasting it (one helper for every console test). */
export { pasteInto as pasteSource } from './console.js';

/** A call from the console page, with the CSRF header as the console sends it. */
export async function call(page: Page, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> | null }> {
  return page.evaluate(async ([m, p, b]) => {
    const csrf = decodeURIComponent(document.cookie.split('; ').find((c) => c.startsWith('svc_csrf='))?.slice(9) ?? '');
    const headers: Record<string, string> = b === undefined ? { 'x-svc-csrf': csrf } : { 'content-type': 'application/json', 'x-svc-csrf': csrf };
    const r = await fetch(p as string, { method: m as string, headers, body: b === undefined ? undefined : JSON.stringify(b) });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) as Record<string, unknown> : null };
  }, [method, path, body] as const);
}

/** A local user in a new group with this role in the workspace, made from the administrator's console page. */
export async function addMember(page: Page, who: { email: string; password: string }, group: string, role: string, ws = 'default'): Promise<void> {
  assert.equal((await call(page, 'POST', '/api/users', { email: who.email, password: who.password, name: who.email.split('@')[0] })).status, 201);
  assert.equal((await call(page, 'POST', '/api/groups', { name: group })).status, 201);
  assert.equal((await call(page, 'PUT', `/api/groups/${group}/members/${encodeURIComponent(who.email)}`)).status, 200);
  assert.equal((await call(page, 'PUT', `/api/workspaces/${ws}/members/groups/${group}`, { role })).status, 200);
}

/** The iframe on the apps origin once it has left the ticket page (redeemed), and its session. */
export async function redeemedFrame(page: Page, apps: string): Promise<{ frame: Frame; session: { status: number; body: Record<string, unknown> } }> {
  const handle = await page.locator('#app-frame').elementHandle();
  const frame = await handle!.contentFrame();
  assert.ok(frame);
  // The ticket page replaces itself with the app's root once the redeem answered 204.
  await frame.waitForURL(`${apps}/`, { timeout: 30_000 });
  const session = await frame.evaluate(async () => {
    const r = await fetch('/_svc/session', { credentials: 'same-origin' });
    return { status: r.status, body: await r.json() as Record<string, unknown> };
  });
  return { frame, session };
}
