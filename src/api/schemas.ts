// Shared response schemas of the /api routes.
import { z } from 'zod';

export const errorSchema = z.object({ error: z.string(), message: z.string() });

/** The client errors every guarded /api route may answer, in the one error shape. */
export const apiErrors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema } as const;

export const workspaceRoleSchema = z.enum(['ws_admin', 'ws_editor', 'ws_viewer']);

export const userSchema = z.object({
  id: z.string(), email: z.string(), name: z.string().nullable(), sub: z.string().nullable(), is_local: z.boolean(),
});

export const groupSchema = z.object({ id: z.string(), name: z.string(), idp_managed: z.boolean() });

export const workspaceSchema = z.object({
  slug: z.string(), name: z.string(), workflow_containers: z.boolean(), workflow_plugins: z.boolean(), created_at: z.string(),
});

export const changedSchema = z.object({ changed: z.boolean() });

/** Timestamps travel as ISO 8601 strings. */
export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

export function workspaceView(w: { slug: string; name: string; workflow_containers: boolean; workflow_plugins: boolean; created_at: Date }) {
  return { slug: w.slug, name: w.name, workflow_containers: w.workflow_containers, workflow_plugins: w.workflow_plugins, created_at: w.created_at.toISOString() };
}

/** A bigint id used as a page cursor: decimal digits within PostgreSQL's bigint (2^63 - 1). The refinement runs even after the regex failed (zod 4), hence its own test. */
export const bigintCursor = z.string().regex(/^\d{1,19}$/, 'expected a non-negative integer id')
  .refine((v) => /^\d{1,19}$/.test(v) && BigInt(v) <= 9223372036854775807n, 'expected an id within 64 bits (at most 9223372036854775807)');
