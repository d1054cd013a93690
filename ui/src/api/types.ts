// Shapes of API answers, named from the generated OpenAPI types.
import type { paths } from './schema';

type Ok<R> = R extends { 200: { content: { 'application/json': infer J } } } ? J
  : R extends { 201: { content: { 'application/json': infer J } } } ? J : never;
/** The JSON body of a route's 200 (or 201) answer. */
export type Body<P extends keyof paths, M extends keyof paths[P]> =
  paths[P][M] extends { responses: infer R } ? Ok<R> : never;

export type AuthConfig = Body<'/api/auth/config', 'get'>;
export type Me = Body<'/api/me', 'get'>;
export type WorkspaceRole = Me['workspaces'][number]['role'];
export type Group = Body<'/api/groups', 'get'>['groups'][number];
export type Members = Body<'/api/workspaces/{ws}/members', 'get'>;
export type Workspace = Body<'/api/workspaces/{ws}', 'get'>;
