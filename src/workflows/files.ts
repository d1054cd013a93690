// Namespace files and execution files in the object store, under `workflow.storage.prefix`:
//   <prefix><workspace id>/namespaces/<namespace>/files/<path>
//   <prefix><workspace id>/executions/<execution id>/<task run id>/<attempt>/<name>
// Caps: max_file_bytes per file, max_task_bytes per task-run attempt, max_read_bytes per read(),
// max_namespace_files per listing. Every object call goes through the storage rule for the
// workspace (src/storage/tenant-store.ts): a namespace or path cannot reach another's files.
import { Transform, type Readable } from 'node:stream';
import type { Services } from '../services.js';
import { badRequest, DomainError, notFound } from '../errors.js';
import { TemplateError } from './template.js';
import { recordGovernance } from '../audit/governance.js';
import { auditActor, type Actor } from '../access/actor.js';

/** S3 refuses object keys over 1,024 bytes (UTF-8); a longer one is the client's 400, never a 500. */
export const MAX_OBJECT_KEY_BYTES = 1024;

/** The object key of `path` under `prefix`, refused with a 400 when it would pass the S3 limit. */
export function objectKey(prefix: string, path: string): string {
  const key = prefix + path;
  const bytes = Buffer.byteLength(key);
  if (bytes > MAX_OBJECT_KEY_BYTES) {
    throw badRequest(`file path too long: its storage key would be ${bytes} bytes, over the ${MAX_OBJECT_KEY_BYTES} an object store takes (the path may have ${MAX_OBJECT_KEY_BYTES - Buffer.byteLength(prefix)} bytes here)`);
  }
  return key;
}

export function assertFilePath(path: string): void {
  if (!path || path.length > 512 || path.startsWith('/') || path.endsWith('/') || /[\u0000-\u001f\\]/.test(path)
    || path.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw badRequest(`invalid file path "${path}": a relative path without "..", empty segments or control characters`);
  }
}

const root = (s: Services, workspaceId: string) => s.storage.root('workflow', { id: workspaceId });
const files = (s: Services, workspaceId: string) => s.storage.of({ tenant: { id: workspaceId } });
export const namespaceFilesPrefix = (s: Services, workspaceId: string, namespace: string) => `${root(s, workspaceId)}namespaces/${namespace}/files/`;
export const executionPrefix = (s: Services, workspaceId: string, executionId: string) => `${root(s, workspaceId)}executions/${executionId}/`;

export async function readNamespaceFile(s: Services, workspaceId: string, namespace: string, path: string, maxBytes: number): Promise<string> {
  let key: string;
  try { assertFilePath(path); key = objectKey(namespaceFilesPrefix(s, workspaceId, namespace), path); } catch (e) { throw new TemplateError(`read('${path}'): ${(e as Error).message}`); }
  const head = await files(s, workspaceId).head(key);
  if (!head) throw new TemplateError(`read('${path}'): no such namespace file in ${namespace}`);
  if (head.size > maxBytes) throw new TemplateError(`read('${path}'): the file is ${head.size} bytes, over workflow.storage.max_read_bytes (${maxBytes})`);
  const body = await files(s, workspaceId).get(key);
  return Buffer.from(body ?? new Uint8Array()).toString('utf8');
}

export async function listNamespaceFiles(s: Services, workspaceId: string, namespace: string) {
  const prefix = namespaceFilesPrefix(s, workspaceId, namespace);
  const max = s.config.workflow.storage.max_namespace_files;
  const objects = await files(s, workspaceId).list(prefix, max + 1);
  return {
    files: objects.slice(0, max).map((o) => ({ path: o.key.slice(prefix.length), size: o.size, updated_at: o.lastModified?.toISOString() ?? null })),
    truncated: objects.length > max,
  };
}

/** Counts bytes through a stream and fails it past `limit` (a 413 for the client). */
export function byteLimit(limit: number, what: string): Transform {
  let n = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      if (n > limit) return cb(new DomainError('payload_too_large', `${what} is over ${limit} bytes`));
      cb(null, chunk);
    },
  });
}

/** Who writes a namespace file, for its governance record (issue 28: writing one was not audited). */
export interface FileAudit { actor: Actor; workspace: string }

export async function putNamespaceFile(s: Services, workspaceId: string, namespace: string, path: string, body: Readable, audit?: FileAudit): Promise<{ size: number }> {
  assertFilePath(path);
  const prefix = namespaceFilesPrefix(s, workspaceId, namespace);
  const key = objectKey(prefix, path);
  const store = files(s, workspaceId);
  const existing = await store.head(key);
  if (!existing) {
    const count = await store.list(prefix, s.config.workflow.storage.max_namespace_files);
    if (count.length >= s.config.workflow.storage.max_namespace_files) {
      throw badRequest(`namespace ${namespace} already holds ${count.length} files, the most workflow.storage.max_namespace_files allows`);
    }
  }
  const limit = s.config.workflow.storage.max_file_bytes;
  let size = 0;
  const counter = byteLimit(limit, `the file (workflow.storage.max_file_bytes)`);
  counter.on('data', (c: Buffer) => { size += c.length; });
  const limited = body.pipe(counter);
  body.on('error', (e) => counter.destroy(e));
  await store.putStream(key, limited, 'application/octet-stream');
  // The object store has no transaction to share: the record follows the write it describes.
  if (audit) await recordGovernance(s.db, { action: 'namespace_file.put', ...auditActor(audit.actor), target: `file:${namespace}/${path}`, workspace: audit.workspace, details: { size, replaced: Boolean(existing) } });
  return { size };
}

export async function getNamespaceFile(s: Services, workspaceId: string, namespace: string, path: string) {
  assertFilePath(path);
  const got = await files(s, workspaceId).getStream(objectKey(namespaceFilesPrefix(s, workspaceId, namespace), path));
  if (!got) throw notFound(`namespace file does not exist: ${path}`);
  return got;
}

export async function deleteNamespaceFile(s: Services, workspaceId: string, namespace: string, path: string, audit?: FileAudit): Promise<void> {
  assertFilePath(path);
  const key = objectKey(namespaceFilesPrefix(s, workspaceId, namespace), path);
  const store = files(s, workspaceId);
  if (!(await store.head(key))) throw notFound(`namespace file does not exist: ${path}`);
  await store.delete(key);
  if (audit) await recordGovernance(s.db, { action: 'namespace_file.delete', ...auditActor(audit.actor), target: `file:${namespace}/${path}`, workspace: audit.workspace });
}

type AttemptIds = { workspaceId: string; executionId: string; taskRunId: string; attempt: number };
const attemptBase = (s: Services, ids: AttemptIds) => `${executionPrefix(s, ids.workspaceId, ids.executionId)}${ids.taskRunId}/${ids.attempt}/`;

/**
 * Streams the output files of one task-run attempt to the object store as the runner reads them
 * (RunCallbacks.onOutputFile): no file is held whole. The runner enforces the caps on the stream;
 * `discard` removes what was stored when the attempt's outputs fail half way.
 */
export function taskFileUploader(s: Services, ids: AttemptIds) {
  const base = attemptBase(s, ids);
  const store = files(s, ids.workspaceId);
  const stored: Record<string, string> = {};
  const keys: string[] = [];
  return {
    stored,
    async sink(name: string, body: Readable): Promise<void> {
      let key: string;
      try { key = objectKey(base, name); } catch (e) { body.resume(); throw e; }
      keys.push(key);
      await store.putStream(key, body, 'application/octet-stream');
      stored[name] = `${ids.taskRunId}/${ids.attempt}/${name}`;
    },
    async discard(log: { warn(o: object, m: string): void }): Promise<void> {
      for (const key of keys) {
        await store.delete(key).catch((e: Error) => log.warn({ key, err: e.message }, 'could not remove a partly stored output file'));
      }
    },
  };
}

export async function listExecutionFiles(s: Services, workspaceId: string, executionId: string) {
  const prefix = executionPrefix(s, workspaceId, executionId);
  const objects = await files(s, workspaceId).list(prefix, s.config.workflow.storage.max_namespace_files);
  return objects.map((o) => ({ path: o.key.slice(prefix.length), size: o.size }));
}

export async function getExecutionFile(s: Services, workspaceId: string, executionId: string, path: string) {
  assertFilePath(path);
  const got = await files(s, workspaceId).getStream(objectKey(executionPrefix(s, workspaceId, executionId), path));
  if (!got) throw notFound(`execution file does not exist: ${path}`);
  return got;
}

/** Removes every file of an execution (retention); returns how many. */
export async function deleteExecutionFiles(s: Services, workspaceId: string, executionId: string): Promise<number> {
  return files(s, workspaceId).deletePrefix(executionPrefix(s, workspaceId, executionId));
}
