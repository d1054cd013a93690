// What every catalog route shares: the Iceberg error schema, the caller of a request (from the
// gate's principal) and the warehouse a request addresses, checked for the right it needs.
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import type { Services } from '../../../services.js';
import type { CatalogPrincipal } from '../../../catalog/gate.js';
import { catalogCaller, requirePolicies, requireRight, type CatalogCaller, type CatalogRight, type PolicyOp } from '../../../catalog/access.js';
import { parseNamespace } from '../../../catalog/names.js';
import { findWarehouse, type Warehouse } from '../../../catalog/warehouse.js';

/** Iceberg REST ErrorModel inside IcebergErrorResponse. */
export const icebergError = z.object({ error: z.object({ message: z.string(), type: z.string(), code: z.number().int() }) })
  .meta({ description: 'IcebergErrorResponse' });
export const catalogErrors = { 400: icebergError, 401: icebergError, 403: icebergError, 404: icebergError, 409: icebergError, 422: icebergError };

const principals = new WeakMap<FastifyRequest, CatalogPrincipal>();
const callers = new WeakMap<FastifyRequest, CatalogCaller>();
export function setCatalogPrincipal(req: FastifyRequest, p: CatalogPrincipal): void { principals.set(req, p); }
/** Who passed the gate, for catalog handlers. */
export function catalogPrincipal(req: FastifyRequest): CatalogPrincipal | undefined { return principals.get(req); }

export async function callerOf(s: Services, req: FastifyRequest): Promise<CatalogCaller> {
  let c = callers.get(req);
  if (!c) {
    const p = principals.get(req);
    if (!p) throw new Error('catalog route reached without passing the gate');
    c = await catalogCaller(s, p);
    callers.set(req, c);
  }
  return c;
}

export interface Scope { s: Services; caller: CatalogCaller; wh: Warehouse }

/** What a request touches, for the policy service's deny items. */
export interface Target { namespace: string; name?: unknown; op: PolicyOp }

/**
 * The caller's right in the warehouse is checked before the warehouse is looked up (no leak),
 * then the policies on the named target (names from the request only, nothing looked up).
 */
export async function scope(ctx: AppContext, req: FastifyRequest, prefix: string, right: CatalogRight, what: string, target?: Target): Promise<Scope> {
  const s = ctx.services();
  const caller = await callerOf(s, req);
  await requireRight(caller, prefix, right, what);
  const wh = await findWarehouse(s, prefix);
  if (target) await requirePolicies(s, caller, prefix, parseNamespace(target.namespace), typeof target.name === 'string' ? target.name : undefined, target.op);
  return { s, caller, wh };
}

/** Policies on a target named by an identifier in a body (rename, transactions). */
export async function checkTargetPolicies(sc: Scope, namespace: string[], name: string, op: PolicyOp): Promise<void> {
  await requirePolicies(sc.s, sc.caller, sc.wh.slug, namespace, name, op);
}

export const prefixParam = z.string().min(1).max(63).meta({ description: 'the warehouse: a workspace slug (from /v1/config)' });
export const namespaceParam = z.string().min(1).max(4400).meta({ description: 'namespace levels joined by the unit separator 0x1F (%1F)' });
export const nameParam = z.string().min(1).max(255);
export const idempotencyHeader = z.looseObject({ 'idempotency-key': z.string().max(36).optional() });
