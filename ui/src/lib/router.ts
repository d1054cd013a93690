// Hash routing: the server serves only `/` and `/ui/*`, so it needs no SPA fallback, and every
// screen is a bookmarkable URL (`#/groups`, `#/w/default/flows/sales/nightly`, ...). Filters are
// kept in the hash's query (`#/w/default/executions?state=FAILED`), so a filtered list is a link.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { name: 'home' }
  | { name: 'groups' }
  | { name: 'clients' }
  | { name: 'audit'; query: URLSearchParams }
  | { name: 'members'; ws: string }
  | { name: 'flows'; ws: string; query: URLSearchParams }
  | { name: 'flow-new'; ws: string }
  | { name: 'flow'; ws: string; namespace: string; id: string; tab: 'editor' | 'revisions' | 'topology' }
  | { name: 'executions'; ws: string; query: URLSearchParams }
  | { name: 'execution'; ws: string; id: string }
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
  if (parts[0] === 'w' && parts.length >= 3) {
    const ws = parts[1];
    const rest = parts.slice(2);
    if (rest[0] === 'members' && rest.length === 1) return { name: 'members', ws };
    if (rest[0] === 'flows') {
      if (rest.length === 1) return { name: 'flows', ws, query };
      if (rest.length === 2 && rest[1] === 'new') return { name: 'flow-new', ws };
      if (rest.length === 3 || rest.length === 4) {
        const tab = rest[3] ?? 'editor';
        if (tab === 'editor' || tab === 'revisions' || tab === 'topology') return { name: 'flow', ws, namespace: rest[1], id: rest[2], tab };
      }
    }
    if (rest[0] === 'executions') {
      if (rest.length === 1) return { name: 'executions', ws, query };
      if (rest.length === 2) return { name: 'execution', ws, id: rest[1] };
    }
  }
  return { name: 'notfound', path };
}

const e = encodeURIComponent;
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
  flows: (ws: string, query?: Record<string, string | undefined>) => `#/w/${e(ws)}/flows${qs(query)}`,
  flowNew: (ws: string) => `#/w/${e(ws)}/flows/new`,
  flow: (ws: string, namespace: string, id: string, tab?: 'revisions' | 'topology') => `#/w/${e(ws)}/flows/${e(namespace)}/${e(id)}${tab ? `/${tab}` : ''}`,
  executions: (ws: string, query?: Record<string, string | undefined>) => `#/w/${e(ws)}/executions${qs(query)}`,
  execution: (ws: string, id: string) => `#/w/${e(ws)}/executions/${e(id)}`,
};

/** The workspace a route is about, if any. */
export const routeWorkspace = (r: Route): string | undefined => ('ws' in r ? r.ws : undefined);

/** The current route; `#main` and other in-page anchors are not routes and keep the screen. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => {
      if (!location.hash.startsWith('#/') && location.hash !== '') return;
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
