// The storage rule (docs/architecture.md): one decision for every object-store operation svc
// signs for a client, vends, lists or performs itself. An operation is allowed when it is one of
// the allow-listed kinds below and every key it touches lies inside a root the caller's workspace
// owns by the layout (layout.ts: svc's configuration and workspace records), and inside `within`
// (a table location) when the caller is narrowed to one. A location a client wrote only ever
// narrows this further; it never widens it. Pure: no I/O.
import { DomainError } from '../errors.js';
import { owns, type StorageLayout, type Tenant } from './layout.js';

/** The object operations svc allows; anything else (ACLs, policies, tagging, copies, ...) is not one. */
export const OBJECT_OPERATIONS = [
  'GetObject', 'HeadObject', 'PutObject', 'DeleteObject',
  'CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload', 'AbortMultipartUpload', 'ListParts',
] as const;
export type ObjectOperation = typeof OBJECT_OPERATIONS[number];

export type StorageOp =
  | { name: ObjectOperation; key: string }
  /** Keys under a prefix: ListObjectsV2 (a client's or svc's listing), DeletePrefix (svc removes them), Vend (a client is told it may work there). */
  | { name: 'ListObjectsV2' | 'DeletePrefix' | 'Vend'; prefix: string }
  /** S3 DeleteObjects: the keys named in its (signed) body. */
  | { name: 'DeleteObjects'; keys: string[] };

export interface StorageScope {
  tenant: Tenant;
  /** A key prefix without trailing '/' (a table location) the operation must also stay under. */
  within?: string;
}

export type StorageAccess = 'read' | 'write';

const READS = new Set<StorageOp['name']>(['GetObject', 'HeadObject', 'ListParts', 'ListObjectsV2', 'Vend']);
/** S3 refuses keys over 1,024 bytes; DeleteObjects names at most 1,000. */
export const MAX_KEY_BYTES = 1024;
export const MAX_DELETE_KEYS = 1000;

/** A refused storage operation: 403, with a message naming the key and the rule. */
export class StorageRefused extends DomainError {
  constructor(message: string) { super('forbidden', `Forbidden: ${message}`); }
}

/** Whether a key has a "." or ".." segment, which URL parsers fold away (another key, or another bucket). */
export const hasDotSegment = (key: string): boolean => key.split('/').some((s) => s === '.' || s === '..');

/** Why a key is not one svc lets anyone address, or null: dot segments and control characters are refused everywhere. */
export function keyProblem(key: string): string | null {
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) return `a key over ${MAX_KEY_BYTES} bytes`;
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'a key with a control character';
  if (hasDotSegment(key)) return 'a key with a "." or ".." segment';
  return null;
}

function keysOf(op: StorageOp): { keys: string[]; prefix: boolean } {
  if ('key' in op) return { keys: [op.key], prefix: false };
  if ('prefix' in op) return { keys: [op.prefix], prefix: true };
  return { keys: op.keys, prefix: false };
}

/** Allows the operation (returning whether it reads or writes) or throws StorageRefused. */
export function authorize(layout: StorageLayout, scope: StorageScope, op: StorageOp): StorageAccess {
  const { keys, prefix } = keysOf(op);
  if (op.name === 'DeleteObjects' && (keys.length === 0 || keys.length > MAX_DELETE_KEYS)) {
    throw new StorageRefused(`a DeleteObjects request names 1 to ${MAX_DELETE_KEYS} keys, not ${keys.length}`);
  }
  const within = scope.within === undefined ? undefined : `${scope.within.replace(/\/+$/, '')}/`;
  const what = prefix ? 'the prefix' : 'the key';
  for (const key of keys) {
    const bad = keyProblem(key);
    if (bad) throw new StorageRefused(`${op.name} on ${bad}`);
    if (!owns(layout, scope.tenant, key)) {
      throw new StorageRefused(`${what} ${JSON.stringify(key)} lies outside the storage of workspace ${scope.tenant.slug ?? scope.tenant.id}`);
    }
    if (within !== undefined && !key.startsWith(within)) {
      throw new StorageRefused(`${what} ${JSON.stringify(key)} lies outside the table location ${within}`);
    }
  }
  return READS.has(op.name) ? 'read' : 'write';
}
