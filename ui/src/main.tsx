// The svc console: Preact components over the typed API client, hash routing, Pico CSS.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import '@picocss/pico/css/pico.min.css';
import './styles/app.css';
import './styles/console.css';
import { api, ApiError, errorText, ok, useCsrfNames } from './api/client';
import type { AuthConfig, Me } from './api/types';
import { clearMessages, navigated, say, warn } from './lib/messages';
import { type Route, href, useRoute } from './lib/router';
import { isPlatformAdmin, SessionContext, type Session } from './lib/session';
import { applyTheme, currentTheme, nextTheme } from './lib/theme';
import { SignIn } from './screens/SignIn';
import { Home } from './screens/Home';
import { may } from './lib/access';
import { WORKSPACE_GROUPS, WORKSPACE_SCREENS } from './nav';
import { lazy, onLazyShown } from './lib/lazy';
import { currentWorkspace, LAST_WS } from './lib/workspace';

// Every screen but sign-in and home arrives when first shown (docs/ui.md "First load"): the first
// load carries the shell only, and Vite puts each screen's code in its own hashed chunk.
const Groups = lazy(() => import('./screens/Groups').then((m) => m.Groups));
const Members = lazy(() => import('./screens/Members').then((m) => m.Members));
const Clients = lazy(() => import('./screens/Clients').then((m) => m.Clients));
const Audit = lazy(() => import('./screens/Audit').then((m) => m.Audit));
const FlowList = lazy(() => import('./screens/flows/FlowList').then((m) => m.FlowList));
const FlowPage = lazy(() => import('./screens/flows/FlowPage').then((m) => m.FlowPage));
const ExecutionList = lazy(() => import('./screens/executions/ExecutionList').then((m) => m.ExecutionList));
const ExecutionPage = lazy(() => import('./screens/executions/ExecutionPage').then((m) => m.ExecutionPage));
const AppList = lazy(() => import('./screens/apps/AppList').then((m) => m.AppList));
const AppPage = lazy(() => import('./screens/apps/AppPage').then((m) => m.AppPage));
const AppFrame = lazy(() => import('./screens/apps/AppFrame').then((m) => m.AppFrame));
const Triggers = lazy(() => import('./screens/workspace/Triggers').then((m) => m.Triggers));
const SqlConsole = lazy(() => import('./screens/sql/SqlConsole').then((m) => m.SqlConsole));
const Catalog = lazy(() => import('./screens/catalog/Catalog').then((m) => m.Catalog));
const CatalogTable = lazy(() => import('./screens/catalog/CatalogTable').then((m) => m.CatalogTable));
const CatalogView = lazy(() => import('./screens/catalog/CatalogView').then((m) => m.CatalogView));
const Engines = lazy(() => import('./screens/engines/Engines').then((m) => m.Engines));
const NamespaceFiles = lazy(() => import('./screens/workspace/NamespaceFiles').then((m) => m.NamespaceFiles));
const Secrets = lazy(() => import('./screens/workspace/Secrets').then((m) => m.Secrets));
const AlertList = lazy(() => import('./screens/alerts/AlertList').then((m) => m.AlertList));
const DataApi = lazy(() => import('./screens/dataapi/DataApi').then((m) => m.DataApi));
const AlertPage = lazy(() => import('./screens/alerts/AlertPage').then((m) => m.AlertPage));
const Connections = lazy(() => import('./screens/governance/Connections').then((m) => m.Connections));
const Policies = lazy(() => import('./screens/governance/Policies').then((m) => m.Policies));
const Tags = lazy(() => import('./screens/governance/Tags').then((m) => m.Tags));

type State =
  | { phase: 'loading' }
  | { phase: 'broken'; message: string }
  | { phase: 'signed-out'; config: AuthConfig; notice?: string }
  | { phase: 'signed-in'; config: AuthConfig; me: Me };

function Screen({ route }: { route: Route }) {
  switch (route.name) {
    case 'home': return <Home />;
    case 'groups': return <Groups />;
    case 'clients': return <Clients />;
    case 'audit': return <Audit query={route.query} />;
    case 'members': return <Members key={route.ws} ws={route.ws} />;
    case 'triggers': return <Triggers key={route.ws} ws={route.ws} />;
    case 'files': return <NamespaceFiles key={route.ws} ws={route.ws} query={route.query} />;
    case 'secrets': return <Secrets key={route.ws} ws={route.ws} />;
    case 'connections': return <Connections key={route.ws} ws={route.ws} />;
    case 'policies': return <Policies key={route.ws} ws={route.ws} />;
    case 'tags': return <Tags key={route.ws} ws={route.ws} />;
    case 'flows': return <FlowList key={route.ws} ws={route.ws} query={route.query} />;
    case 'flow-new': return <FlowPage key={`${route.ws}/new`} ws={route.ws} tab="editor" />;
    case 'flow': return <FlowPage key={`${route.ws}/${route.namespace}/${route.id}`} ws={route.ws} namespace={route.namespace} id={route.id} tab={route.tab} />;
    case 'executions': return <ExecutionList key={route.ws} ws={route.ws} query={route.query} />;
    case 'execution': return <ExecutionPage key={route.id} ws={route.ws} id={route.id} tab={route.query.get('tab') ?? ''} />;
    case 'apps': return <AppList key={route.ws} ws={route.ws} />;
    case 'app': return <AppPage key={`${route.ws}/${route.id}`} ws={route.ws} id={route.id} />;
    case 'app-open': return <AppFrame key={`${route.ws}/${route.id}/${route.mode}`} ws={route.ws} id={route.id} mode={route.mode} />;
    case 'data-api': return <DataApi key={route.ws} ws={route.ws} />;
    case 'alerts': return <AlertList key={route.ws} ws={route.ws} />;
    case 'alert': return <AlertPage key={`${route.ws}/${route.id ?? 'new'}`} ws={route.ws} id={route.id} />;
    case 'reports': return <AlertList key={`${route.ws}/reports`} ws={route.ws} kind="report" />;
    case 'report': return <AlertPage key={`${route.ws}/report/${route.id ?? 'new'}`} ws={route.ws} id={route.id} kind="report" />;
    case 'engines': return <Engines key={route.ws} ws={route.ws} />;
    case 'catalog': return <Catalog key={route.ws} ws={route.ws} query={route.query} />;
    case 'catalog-table': return <CatalogTable key={`${route.ws}/${route.namespace.join('.')}/${route.table}`} ws={route.ws} namespace={route.namespace} name={route.table} />;
    case 'catalog-view': return <CatalogView key={`${route.ws}/${route.namespace.join('.')}/${route.table}`} ws={route.ws} namespace={route.namespace} name={route.table} />;
    case 'sql': return <SqlConsole key={route.ws} ws={route.ws} query={route.query} />;
    default: return <><h1>Page not found</h1><p>There is no page at <code>{route.path}</code>. <a href={href.home()}>Go home</a></p></>;
  }
}

const TITLES: Record<Route['name'], string> = {
  triggers: 'Triggers', files: 'Namespace files', secrets: 'Secrets', connections: 'Connections', policies: 'Policies', tags: 'Tags',
  home: 'Home', groups: 'Groups', clients: 'OAuth clients', audit: 'Audit log', members: 'Members', notfound: 'Not found', flows: 'Flows', 'flow-new': 'New flow', flow: 'Flow',
  executions: 'Executions', execution: 'Execution', apps: 'Apps', app: 'App', 'app-open': 'App',
  catalog: 'Catalog', 'catalog-table': 'Table', 'catalog-view': 'View',
  sql: 'SQL console', engines: 'Engines', alerts: 'Alerts', alert: 'Alert', reports: 'Reports', report: 'Report', 'data-api': 'Data API',
};


function WorkspaceNav({ route, me, open }: { route: Route; me: Me; open: boolean }) {
  const ws = currentWorkspace(route, me);
  useEffect(() => { if (ws && 'ws' in route) { try { localStorage.setItem(LAST_WS, ws); } catch { /* storage disabled */ } } }, [ws]);
  if (!ws) return null;
  const screens = WORKSPACE_SCREENS.filter((s) => may(me, ws, s.min));
  if (screens.length === 0) return null;
  const others = me.workspaces.filter((w) => w.slug !== ws);
  return (
    <nav aria-label={`Workspace ${ws}`} class={open ? 'wsnav open' : 'wsnav'} id="wsnav">
      <div class="ws-pick">
        {others.length === 0 ? <strong class="ws-name">{ws}</strong> : (
          <select aria-label="Workspace" value={ws} onChange={(e) => { location.hash = WORKSPACE_SCREENS[0].href(e.currentTarget.value); }}>
            {me.workspaces.some((w) => w.slug === ws) ? null : <option value={ws}>{ws}</option>}
            {me.workspaces.map((w) => <option key={w.slug} value={w.slug}>{w.name}</option>)}
          </select>
        )}
      </div>
      {WORKSPACE_GROUPS.map((g) => {
        const items = screens.filter((s) => s.group === g);
        return items.length === 0 ? null : (
          <div key={g} class="wsgroup">
            <span class="wsgroup-title" id={`wsg-${g}`}>{g}</span>
            <ul aria-labelledby={`wsg-${g}`}>
              {items.map((s) => <li key={s.key}><a href={s.href(ws)} aria-current={s.routes.includes(route.name) ? 'page' : undefined}>{s.label}</a></li>)}
            </ul>
          </div>
        );
      })}
    </nav>
  );
}

function TopBar({ route, me, onSignOut, menu, setMenu }: { route: Route; me: Me; onSignOut(): Promise<void>; menu: boolean; setMenu(open: boolean): void }) {
  const [theme, setTheme] = useState(currentTheme);
  const [busy, setBusy] = useState(false);
  const link = (to: string, text: string, active: boolean) => <a href={to} aria-current={active ? 'page' : undefined}>{text}</a>;
  return (
    <header class={menu ? 'topbar menu-open' : 'topbar'}>
      <nav aria-label="Main" class="container">
        <ul>
          <li><a class="brand" href={href.home()}>svc</a></li>
          {/* On a phone the navigation folds behind one button, so the screen comes first. */}
          <li class="menu-item"><button type="button" class="outline secondary small menu-toggle" id="menu-toggle" aria-expanded={menu ? 'true' : 'false'} aria-controls="wsnav" onClick={() => setMenu(!menu)}>Menu</button></li>
          <li>{link(href.home(), 'Home', route.name === 'home')}</li>
          {isPlatformAdmin(me) ? <>
            <li class="admin-link">{link(href.groups(), 'Groups', route.name === 'groups')}</li>
            <li class="admin-link">{link(href.clients(), 'OAuth clients', route.name === 'clients')}</li>
            <li class="admin-link">{link(href.audit(), 'Audit log', route.name === 'audit')}</li>
            <li class="admin-link"><a href="/admin/queues">Queues</a></li>
          </> : null}
        </ul>
        <ul>
          <li><span class="who" title={me.user.email}>{me.user.name || me.user.email}</span></li>
          <li>
            <button type="button" class="outline secondary small" id="theme" aria-label={`Theme: ${theme}. Switch to ${nextTheme(theme)}`}
              onClick={() => { const t = nextTheme(theme); applyTheme(t); setTheme(t); }}>{theme === 'dark' ? 'Dark' : theme === 'light' ? 'Light' : 'Auto'}</button>
          </li>
          <li>
            <button type="button" class="secondary small" id="sign-out" disabled={busy} aria-busy={busy ? 'true' : undefined}
              onClick={async () => { setBusy(true); try { await onSignOut(); } finally { setBusy(false); } }}>Sign out</button>
          </li>
        </ul>
      </nav>
    </header>
  );
}

function App() {
  const route = useRoute();
  const [state, setState] = useState<State>({ phase: 'loading' });
  const focusNext = useRef(false);
  const [menu, setMenu] = useState(false);

  /** Loads the sign-in configuration and who is signed in; a 401 shows the sign-in view. */
  const start = async (notice?: string) => {
    let config: AuthConfig;
    try {
      config = await ok(api.GET('/api/auth/config'));
      useCsrfNames(config.csrf_cookie, config.csrf_header);
    } catch (err) {
      setState({ phase: 'broken', message: `The sign-in configuration cannot be loaded: ${errorText(err)}` });
      return;
    }
    // Not signed in (no live session): the sign-in view, without asking /api/me for a 401.
    if (!config.signed_in) { setState({ phase: 'signed-out', config, notice }); return; }
    try {
      const me = await ok(api.GET('/api/me'));
      setState({ phase: 'signed-in', config, me });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setState({ phase: 'signed-out', config, notice });
      else setState({ phase: 'broken', message: errorText(err) });
    }
  };
  useEffect(() => { void start(); }, []);

  // A navigation clears the last screen's messages and moves focus to the new screen's heading.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    navigated();
    setMenu(false);
    focusNext.current = true;
  }, [route]);
  // A screen still loading has no heading yet: focus moves when it arrives (onLazyShown).
  const focusHeading = () => {
    if (!focusNext.current) return;
    const h1 = document.querySelector<HTMLElement>('#main h1');
    if (!h1) return;
    focusNext.current = false;
    h1.tabIndex = -1;
    h1.focus();
  };
  useEffect(() => { if (state.phase === 'signed-in') focusHeading(); });
  useEffect(() => onLazyShown(focusHeading), []);
  useEffect(() => {
    if (state.phase === 'signed-in') document.title = `${TITLES[route.name]} · svc`;
  }, [route, state.phase]);

  if (state.phase === 'loading') return <main id="main" tabIndex={-1} class="container"><p aria-busy="true">Loading…</p></main>;
  if (state.phase === 'broken') return <main id="main" tabIndex={-1} class="container"><h1>svc</h1><p class="message error visible">{state.message}</p></main>;
  if (state.phase === 'signed-out') {
    return <SignIn key={state.notice ?? ''} config={state.config} notice={state.notice}
      onSignedIn={() => { clearMessages(); focusNext.current = true; void start(); }} />;
  }

  const session: Session = {
    config: state.config,
    me: state.me,
    async refreshMe() {
      const me = await ok(api.GET('/api/me'));
      setState({ phase: 'signed-in', config: state.config, me });
      return me;
    },
    end(notice) {
      setState({ phase: 'signed-out', config: state.config, notice });
    },
  };

  const signOut = async () => {
    try {
      await ok(api.POST('/api/auth/logout'));
    } catch (err) {
      // Already signed out elsewhere (401): the outcome is the same.
      if (!(err instanceof ApiError && err.status === 401)) { warn(`Signing out failed: ${errorText(err)}`); return; }
    }
    if (location.hash && location.hash !== '#/') history.replaceState(null, '', '#/');
    setState({ phase: 'signed-out', config: state.config });
    say('You have signed out.');
  };

  return (
    <SessionContext.Provider value={session}>
      <TopBar route={route} me={state.me} onSignOut={signOut} menu={menu} setMenu={setMenu} />
      {/* The workspace navigation and the screen: side by side on a wide window (app.css). */}
      <div class="container shell">
        <WorkspaceNav route={route} me={state.me} open={menu} />
        <main id="main" tabIndex={-1}>
          <Screen route={route} />
        </main>
      </div>
    </SessionContext.Provider>
  );
}

applyTheme(currentTheme());
document.getElementById('skip-link')?.addEventListener('click', (ev) => {
  ev.preventDefault();
  const target = document.querySelector<HTMLElement>('#main h1') ?? document.getElementById('main');
  if (target) { target.tabIndex = -1; target.focus(); }
});
render(<App />, document.getElementById('app')!);
