// Hash routing: the server serves only `/` and `/ui/*`, so it needs no SPA fallback, and every
// screen is a bookmarkable URL (`#/groups`, `#/w/default/flows/sales/nightly`, ...). Filters are
// kept in the hash's query (`#/w/default/executions?state=FAILED`), so a filtered list is a link.
import { useEffect, useState } from 'preact/hooks';
import { mayLeave } from './unsaved';

/** Workspace screens at `#/w/<ws>/<page>` with only a query (filters, the folder shown). */
export const WS_PAGES = ['triggers', 'files', 'secrets', 'connections', 'policies', 'tags'] as const;
export type WsPage = (typeof WS_PAGES)[number];

export type Route =
  | { name: 'home' }
  | { name: 'groups' }
  | { name: 'clients' }
  | { name: 'audit'; query: URLSearchParams }
  | { name: 'members'; ws: string }
  | { name: WsPage; ws: string; query: URLSearchParams }
  | { name: 'flows'; ws: string; query: URLSearchParams }
  | { name: 'flow-new'; ws: string }
  | { name: 'flow'; ws: string; namespace: string; id: string; tab: 'editor' | 'revisions' | 'topology' }
  | { name: 'executions'; ws: string; query: URLSearchParams }
  | { name: 'execution'; ws: string; id: string; query: URLSearchParams }
  | { name: 'apps'; ws: string }
  | { name: 'app'; ws: string; id: string }
  | { name: 'app-open'; ws: string; id: string; mode: 'run' | 'edit' }
  | { name: 'sql'; ws: string; query: URLSearchParams }
  | { name: 'engines'; ws: string }
  | { name: 'alerts'; ws: string }
  | { name: 'alert'; ws: string; id?: string }
  | { name: 'reports'; ws: string }
  | { name: 'report'; ws: string; id?: string }
  | { name: 'data-api'; ws: string }
  | { name: 'catalog'; ws: string; query: URLSearchParams }
  | { name: 'catalog-table' | 'catalog-view'; ws: string; namespace: string[]; table: string }
  | { name: 'notfound'; path: string };

function decode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

export function parseRoute(hash: string): Route {
  const full = hash.startsWith('#/') ? hash.slice(1) : '/';
  const q = full.indexOf('?');
  const path = q < 0 ? full : full.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : full.slice(q + 1));
  if (path === '/' || path === '') return { name: 'home' };
  if (path === '/groups') return { name: 'groups' };
  if (path === '/clients') return { name: 'clients' };
  if (path === '/audit') return { name: 'audit', query };
  const parts = path.split('/').filter(Boolean).map(decode);
  if (parts[0] === 'workspaces' && parts.length === 3 && parts[2] === 'members') return { name: 'members', ws: parts[1] };
  // The link in alert and report notifications (src/automation): `#/workspaces/<ws>/alerts/<id>`, `.../reports/<id>`.
  if (parts[0] === 'workspaces' && parts.length === 4 && parts[2] === 'alerts') return { name: 'alert', ws: parts[1], id: parts[3] };
  if (parts[0] === 'workspaces' && parts.length === 4 && parts[2] === 'reports') return { name: 'report', ws: parts[1], id: parts[3] };
  if (parts[0] === 'w' && parts.length >= 3) {
    const ws = parts[1];
    const rest = parts.slice(2);
    if (rest[0] === 'members' && rest.length === 1) return { name: 'members', ws };
    if (rest.length === 1 && (WS_PAGES as readonly string[]).includes(rest[0])) return { name: rest[0] as WsPage, ws, query };
    if (rest[0] === 'flows') {
      if (rest.length === 1) return { name: 'flows', ws, query };
      if (rest.length === 2 && rest[1] === 'new') return { name: 'flow-new', ws };
      if (rest.length === 3 || rest.length === 4) {
        const tab = rest[3] ?? 'editor';
        if (tab === 'editor' || tab === 'revisions' || tab === 'topology') return { name: 'flow', ws, namespace: rest[1], id: rest[2], tab };
      }
    }
    if (rest[0] === 'apps') {
      if (rest.length === 1) return { name: 'apps', ws };
      if (rest.length === 2) return { name: 'app', ws, id: rest[1] };
      if (rest.length === 3 && (rest[2] === 'run' || rest[2] === 'edit')) return { name: 'app-open', ws, id: rest[1], mode: rest[2] };
    }
    if (rest[0] === 'sql' && rest.length === 1) return { name: 'sql', ws, query };
    if (rest[0] === 'alerts') {
      if (rest.length === 1) return { name: 'alerts', ws };
      if (rest.length === 2) return { name: 'alert', ws, id: rest[1] === 'new' ? undefined : rest[1] };
    }
    if (rest[0] === 'reports') {
      if (rest.length === 1) return { name: 'reports', ws };
      if (rest.length === 2) return { name: 'report', ws, id: rest[1] === 'new' ? undefined : rest[1] };
    }
    if (rest[0] === 'data-api' && rest.length === 1) return { name: 'data-api', ws };
    if (rest[0] === 'catalog') {
      if (rest.length === 1) return { name: 'catalog', ws, query };
      // `#/w/<ws>/catalog/tables/<levels joined by %1F>/<name>`, as the catalog paths write a namespace.
      if (rest.length === 4 && (rest[1] === 'tables' || rest[1] === 'views')) {
        return { name: rest[1] === 'tables' ? 'catalog-table' : 'catalog-view', ws, namespace: rest[2].split(NS_SEP), table: rest[3] };
      }
    }
    if (rest[0] === 'engines' && rest.length === 1) return { name: 'engines', ws };
    if (rest[0] === 'executions') {
      if (rest.length === 1) return { name: 'executions', ws, query };
      if (rest.length === 2) return { name: 'execution', ws, id: rest[1], query };
    }
  }
  return { name: 'notfound', path };
}

const e = encodeURIComponent;
/** Namespace levels are joined by the unit separator in URLs, as in the catalog's own paths. */
export const NS_SEP = '\u001f';
const qs = (params?: Record<string, string | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
};

export const href = {
  home: () => '#/',
  groups: () => '#/groups',
  clients: () => '#/clients',
  audit: () => '#/audit',
  members: (ws: string) => `#/workspaces/${e(ws)}/members`,
  page: (ws: string, page: WsPage, query?: Record<string, string | undefined>) => `#/w/${e(ws)}/${page}${qs(query)}`,
  flows: (ws: string, query?: Record<string, string | undefined>) => `#/w/${e(ws)}/flows${qs(query)}`,
  flowNew: (ws: string) => `#/w/${e(ws)}/flows/new`,
  flow: (ws: string, namespace: string, id: string, tab?: 'revisions' | 'topology') => `#/w/${e(ws)}/flows/${e(namespace)}/${e(id)}${tab ? `/${tab}` : ''}`,
  executions: (ws: string, query?: Record<string, string | undefined>) => `#/w/${e(ws)}/executions${qs(query)}`,
  execution: (ws: string, id: string, tab?: string) => `#/w/${e(ws)}/executions/${e(id)}${qs({ tab })}`,
  alerts: (ws: string) => `#/w/${e(ws)}/alerts`,
  alertNew: (ws: string) => `#/w/${e(ws)}/alerts/new`,
  alert: (ws: string, id: string) => `#/w/${e(ws)}/alerts/${e(id)}`,
  reports: (ws: string) => `#/w/${e(ws)}/reports`,
  reportNew: (ws: string) => `#/w/${e(ws)}/reports/new`,
  report: (ws: string, id: string) => `#/w/${e(ws)}/reports/${e(id)}`,
  dataApi: (ws: string) => `#/w/${e(ws)}/data-api`,
  engines: (ws: string) => `#/w/${e(ws)}/engines`,
  apps: (ws: string) => `#/w/${e(ws)}/apps`,
  app: (ws: string, id: string) => `#/w/${e(ws)}/apps/${e(id)}`,
  appOpen: (ws: string, id: string, mode: 'run' | 'edit') => `#/w/${e(ws)}/apps/${e(id)}/${mode}`,
  sql: (ws: string, query?: Record<string, string | undefined>) => `#/w/${e(ws)}/sql${qs(query)}`,
  catalog: (ws: string, namespace?: string[]) => `#/w/${e(ws)}/catalog${qs({ ns: namespace?.join(NS_SEP) })}`,
  catalogTable: (ws: string, namespace: string[], name: string) => `#/w/${e(ws)}/catalog/tables/${e(namespace.join(NS_SEP))}/${e(name)}`,
  catalogView: (ws: string, namespace: string[], name: string) => `#/w/${e(ws)}/catalog/views/${e(namespace.join(NS_SEP))}/${e(name)}`,
};

/** The workspace a route is about, if any. */
export const routeWorkspace = (r: Route): string | undefined => ('ws' in r ? r.ws : undefined);

/** The current route; `#main` and other in-page anchors are not routes and keep the screen. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    let shown = location.hash;
    const onChange = () => {
      if (!location.hash.startsWith('#/') && location.hash !== '') return;
      // Back or Forward away from a screen with unsaved changes asks first; staying puts the
      // address back without a navigation (lib/unsaved.ts).
      if (!mayLeave(location.hash)) { history.pushState(null, '', shown || '#/'); return; }
      shown = location.hash;
      setRoute(parseRoute(location.hash));
    };
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** Replaces the hash's query without a new history entry or a re-render of other screens. */
export function replaceQuery(base: string, params: Record<string, string | undefined>): void {
  const target = `${base}${qs(params)}`;
  if (location.hash !== target) location.replace(target);
}
