// Which policy service a Ranger plugin names. One service per workspace, named by its slug; an
// engine svc provisions is configured with `<workspace>.<engine>` (src/engines/render.ts), the
// name of that engine's plugin, so administrators see each engine's polls apart: it is the same
// service, answered with the workspace's policies under the name the plugin asked for. Slugs and
// engine names hold no dot, so the split is unambiguous; an engine that does not exist (deleted,
// or never made) is an unknown service, as Ranger answers it.
import type { Db } from '../db/index.js';
import { findWorkspace } from '../workspaces/workspaces.js';

export interface PolicyService { workspaceId: string; slug: string; engine?: string }

export async function findPolicyService(db: Db, service: string): Promise<PolicyService | null> {
  const dot = service.indexOf('.');
  const slug = dot < 0 ? service : service.slice(0, dot);
  const ws = await findWorkspace(db, slug);
  if (!ws) return null;
  if (dot < 0) return { workspaceId: ws.id, slug };
  const engine = service.slice(dot + 1);
  const row = await db.selectFrom('engines').select('name').where('workspace_id', '=', ws.id).where('name', '=', engine).executeTakeFirst();
  return row ? { workspaceId: ws.id, slug, engine } : null;
}
