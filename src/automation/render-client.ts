// The service's side of screenshots: a session of its own for one render, the call to the
// renderer at automation.renderer_url, and the session's end (docs/alerts.md "The renderer").
//
// The render runs as the report's run-as person (docs/alerts.md "Who a report renders as"): whoever
// last set what it renders or where it goes, with their rights at the time of the render, and only
// while they may still set them (ws_editor of the report's workspace). So a report never shows
// anyone more than the person who chose its page and its recipients could see themselves. The
// renderer gets a fresh session token of that person that expires RENDER_SESSION_MS after it was
// made and is revoked as soon as the render ends, so a leaked token is worth little, and no
// person's own session is ever handed to the renderer.
import type { Services } from '../services.js';
import type { AutomationRow } from '../db/automation-types.js';
import { hashToken } from '../auth/sessions.js';
import { allows } from '../access/access.js';

export const RENDER_TIMEOUT_MS = 30_000;
/** Lifetime of a render's session: the render's deadline and some slack. */
export const RENDER_SESSION_MS = RENDER_TIMEOUT_MS + 30_000;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** Renders `path` as the report's run-as person; `workspace` is the report's workspace slug. */
export async function renderScreenshot(services: Services, a: Pick<AutomationRow, 'run_as'>, workspace: string, path: string): Promise<Buffer> {
  const again = 'an editor who saves its content or recipients again makes it render as them';
  const snap = a.run_as ? await services.access.forUser(a.run_as) : null;
  if (!snap?.user) throw new Error(`the report has no one to render as (the person who last set its content or recipients was deleted): ${again}`);
  if (!allows(snap, { workspace, role: 'ws_editor' })) {
    throw new Error(`the report renders as the person who last set its content or recipients, who no longer has ws_editor in workspace ${workspace}: ${again}`);
  }
  const session = await services.sessions.create(snap.user.id, snap.user.sub, { userAgent: 'svc-renderer' });
  try {
    await services.db.updateTable('sessions').set({ expires_at: new Date(services.clock.now().getTime() + RENDER_SESSION_MS) })
      .where('id_hash', '=', hashToken(session.token)).execute();
    const base = services.config.automation.renderer_url.replace(/\/+$/, '');
    let res: Response;
    try {
      res = await fetch(`${base}/render`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ path, cookie: { name: services.config.session.cookie_name, value: session.token }, timeout_ms: RENDER_TIMEOUT_MS }),
        signal: AbortSignal.timeout(RENDER_TIMEOUT_MS + 10_000),
      });
    } catch (err) {
      throw new Error(`the renderer at ${base} did not answer: ${(err as Error).message}`);
    }
    if (!res.ok) {
      const text = (await res.text().catch(() => '')).slice(0, 300);
      let message = text;
      try { message = (JSON.parse(text) as { message?: string }).message ?? text; } catch { /* plain text */ }
      throw new Error(`the renderer answered ${res.status}: ${message}`);
    }
    const png = Buffer.from(await res.arrayBuffer());
    if (png.length > MAX_IMAGE_BYTES) throw new Error(`the screenshot is larger than ${MAX_IMAGE_BYTES} bytes`);
    return png;
  } finally {
    await services.sessions.revoke(session.token);
  }
}
