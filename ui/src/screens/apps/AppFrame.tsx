// An app opened in the apps origin's iframe through the ticket flow (docs/apps.md "Opening an
// app"): the console asks the service for a one-time ticket (a CSRF-protected POST), loads the
// ticket URL in the iframe, and hands the ticket's secret to the iframe by postMessage only when
// the iframe's page says it is ready, only from that iframe's window and the apps origin, and only
// to the apps origin. The secret is sent once and then forgotten: the URL alone opens nothing, so
// a copied or logged link is worthless. Run mode runs the published version (any member); edit
// mode opens the author's notebook (ws_editor).
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { Button, FormError } from '../../components/ui';
import { may } from '../../lib/access';
import { clearMessages } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { useLoad } from '../../lib/useLoad';

interface Opened { url: string; origin: string; version: number | null; expiresAt: string }

/** The ticket URL's origin, or null when the URL is not an http(s) URL (never framed then). */
export function frameOrigin(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : null;
  } catch { return null; }
}

export function AppFrame({ ws, id, mode }: { ws: string; id: string; mode: 'run' | 'edit' }) {
  const session = useSession();
  const canEdit = may(session.me, ws, 'ws_editor');
  const app = useLoad(() => ok(api.GET('/api/workspaces/{ws}/apps/{id}', { params: { path: { ws, id } } })), [ws, id]);
  const [opened, setOpened] = useState<Opened | null>(null);
  const [err, setErr] = useState('');
  const [handed, setHanded] = useState(false);
  const [attempt, setAttempt] = useState(0);
  const frame = useRef<HTMLIFrameElement>(null);
  // The secret lives here only until it is handed over; it is never rendered or put in a URL.
  const secret = useRef<string | null>(null);

  useLayoutEffect(() => {
    let live = true;
    setOpened(null); setErr(''); setHanded(false); secret.current = null;
    if (mode === 'edit' && !canEdit) { setErr(`Edit mode needs the ws_editor role in ${ws}.`); return; }
    ok(api.POST('/api/workspaces/{ws}/apps/{id}/tickets', { params: { path: { ws, id } }, body: { mode } })).then((t) => {
      if (!live) return;
      const origin = frameOrigin(t.url);
      if (!origin) { setErr('The service answered a ticket URL that is not http(s); the app is not opened.'); return; }
      secret.current = t.secret;
      setOpened({ url: t.url, origin, version: t.version, expiresAt: t.expires_at });
    }, (e) => { if (live) reportTo(session, setErr)(e); });
    return () => { live = false; secret.current = null; };
  }, [ws, id, mode, attempt]);

  // Installed in the same commit that renders the iframe, before its page can post "ready".
  useLayoutEffect(() => {
    if (!opened) return;
    const onMessage = (ev: MessageEvent) => {
      const win = frame.current?.contentWindow;
      if (!win || ev.source !== win || ev.origin !== opened.origin) return;
      const data = ev.data as { type?: unknown } | null;
      if (!data || data.type !== 'svc-app-ready' || secret.current === null) return;
      win.postMessage({ type: 'svc-app-secret', secret: secret.current }, opened.origin);
      secret.current = null;
      setHanded(true);
    };
    window.addEventListener('message', onMessage);
    // A frame that never says it is ready (refused by the apps origin's frame-ancestors because
    // this page is not apps.service_origin, or not reachable) would leave a blank box: once the
    // ticket has expired without the handover, say so where the app would be.
    const wait = Math.min(Math.max(Date.parse(opened.expiresAt) - Date.now(), 1_000), 600_000);
    const timer = window.setTimeout(() => {
      if (secret.current === null) return;
      secret.current = null;
      setErr(`The app did not answer before its ticket expired. Check that the apps origin (${opened.origin}) is reachable and that apps.service_origin is this page's origin (${location.origin}), then Reopen.`);
    }, wait);
    return () => { window.removeEventListener('message', onMessage); window.clearTimeout(timer); };
  }, [opened]);

  const name = app.data?.name ?? 'App';
  const modeText = mode === 'run' ? (opened?.version ? `run mode, version ${opened.version}` : 'run mode') : 'edit mode';
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs"><ul><li><a href={href.apps(ws)}>Apps</a></li>{canEdit ? <li><a href={href.app(ws, id)}>{name}</a></li> : null}<li>{mode === 'run' ? 'Open' : 'Edit'}</li></ul></nav>
      <div class="title-row">
        <h1>{name} <span class="muted small-text">({modeText})</span></h1>
        <div class="actions">
          <Button class="secondary" id="reopen-app" onClick={() => { clearMessages(); setAttempt(attempt + 1); }}>Reopen</Button>
          {mode === 'run' && canEdit ? <a class="button secondary" href={href.appOpen(ws, id, 'edit')}>Edit mode</a> : null}
          {mode === 'edit' && app.data?.published_version != null ? <a class="button secondary" href={href.appOpen(ws, id, 'run')}>Run mode</a> : null}
        </div>
      </div>
      <FormError text={err} />
      <p class="visually-hidden" role="status" aria-live="polite" id="app-frame-status">{opened ? (handed ? `${name} is opening.` : `Opening ${name}…`) : ''}</p>
      {opened ? (
        <iframe key={opened.url} ref={frame} id="app-frame" class="app-frame" src={opened.url} title={`App ${name} (${modeText})`}
          referrerpolicy="no-referrer" sandbox="allow-scripts allow-same-origin allow-forms allow-downloads allow-modals allow-popups" />
      ) : err ? null : <p aria-busy="true">Asking for a ticket…</p>}
    </>
  );
}
