// Workspace secrets read by flow templates through secret('NAME'): sealed with secrets.master_key,
// never returned by the API (only their names), written by ws_admin.
import type { Services } from '../services.js';
import { badRequest, notFound } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import type { Actor } from '../access/actor.js';

export const SECRET_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const context = (workspaceId: string, name: string) => `workflow_secrets:${workspaceId}:${name}`;

export async function putWorkflowSecret(services: Services, actor: Actor, ws: { id: string; slug: string }, name: string, value: string): Promise<void> {
  if (!SECRET_NAME_RE.test(name)) throw badRequest('invalid secret name: letters, digits and _, starting with a letter or _');
  if (!services.sealer.enabled) throw badRequest('secrets.master_key is not set: cannot store a secret');
  const sealed = services.sealer.seal(value, context(ws.id, name));
  await services.db.transaction().execute(async (tx) => {
    await tx.insertInto('workflow_secrets').values({ workspace_id: ws.id, name, sealed, updated_by: actor.id })
      .onConflict((oc) => oc.columns(['workspace_id', 'name']).doUpdateSet({ sealed, updated_at: new Date(), updated_by: actor.id })).execute();
    await recordGovernance(tx, { action: 'secret.put', actorId: actor.id, actor: actor.email, target: `secret:${name}`, workspace: ws.slug });
  });
}

export async function deleteWorkflowSecret(services: Services, actor: Actor, ws: { id: string; slug: string }, name: string): Promise<void> {
  await services.db.transaction().execute(async (tx) => {
    const res = await tx.deleteFrom('workflow_secrets').where('workspace_id', '=', ws.id).where('name', '=', name).executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw notFound(`secret does not exist: ${name}`);
    await recordGovernance(tx, { action: 'secret.delete', actorId: actor.id, actor: actor.email, target: `secret:${name}`, workspace: ws.slug });
  });
}

export async function listWorkflowSecrets(services: Services, workspaceId: string) {
  return services.db.selectFrom('workflow_secrets').select(['name', 'updated_at']).where('workspace_id', '=', workspaceId).orderBy('name').execute();
}

export async function readWorkflowSecret(services: Services, workspaceId: string, name: string): Promise<string | null> {
  const row = await services.db.selectFrom('workflow_secrets').select('sealed').where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst();
  if (!row) return null;
  return services.sealer.unseal(row.sealed, context(workspaceId, name)).toString('utf8');
}
