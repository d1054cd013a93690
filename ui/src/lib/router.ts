// Hash routing: the server serves only `/` and `/ui/*`, so it needs no SPA fallback, and every
// screen is a bookmarkable URL (`#/groups`, `#/workspaces/default/members`, ...).
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { name: 'home' }
  | { name: 'groups' }
  | { name: 'members'; ws: string }
  | { name: 'notfound'; path: string };

function decode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

export function parseRoute(hash: string): Route {
  const full = hash.startsWith('#/') ? hash.slice(1) : '/';
  const path = full.split('?')[0];
  if (path === '/' || path === '') return { name: 'home' };
  if (path === '/groups') return { name: 'groups' };
  const m = /^\/workspaces\/([^/]+)\/members\/?$/.exec(path);
  if (m) return { name: 'members', ws: decode(m[1]) };
  return { name: 'notfound', path };
}

export const href = {
  home: () => '#/',
  groups: () => '#/groups',
  members: (ws: string) => `#/workspaces/${encodeURIComponent(ws)}/members`,
};

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
