// What the signed-in person may do in a workspace, from GET /api/me: the role of their groups
// there, and every right for a platform administrator (as the server decides, src/access). The
// console does not offer what a role may not do; the server checks again anyway.
import type { Me, WorkspaceRole } from '../api/types';

const RANK: Record<WorkspaceRole, number> = { ws_viewer: 1, ws_editor: 2, ws_admin: 3 };

export function roleIn(me: Me, ws: string): WorkspaceRole | null {
  if (me.platform_roles.includes('platform_admin')) return 'ws_admin';
  return me.workspaces.find((w) => w.slug === ws)?.role ?? null;
}

export function may(me: Me, ws: string, min: WorkspaceRole): boolean {
  const role = roleIn(me, ws);
  return role !== null && RANK[role] >= RANK[min];
}
