// The workspace the console is about when the route names none (home): the last one used, else
// the first of the person's workspaces.
import type { Me } from '../api/types';
import type { Route } from './router';

export const LAST_WS = 'svc-workspace';

export function currentWorkspace(route: Route, me: Me): string | undefined {
  const slugs = me.workspaces.map((w) => w.slug);
  if ('ws' in route) return route.ws;
  let last: string | null = null;
  try { last = localStorage.getItem(LAST_WS); } catch { last = null; }
  return last && slugs.includes(last) ? last : slugs[0];
}
