// App pods (SPEC 7 lifecycle, 8 apps.pod; docs/apps.md "Pods"): the pure rules, free of Redis and
// of any launcher, so they are tested on their own.
//   - an edit session runs in its author's edit pod: one per author per workspace (every app the
//     author edits in that workspace shares it, as a JupyterHub server is one per user);
//   - a run session runs in the pod of the published version it opened: one per app version,
//     shared by its viewers up to apps.pod.run_session_cap open sessions;
//   - a pod unused for apps.pod.idle_secs (edit) or run_idle_secs (run) is stopped, judged on the
//     injected clock.
import type { AppBinding } from './tickets.js';

export type PodMode = 'edit' | 'run';

/** What a launcher needs to start a pod and what the proxy needs to reach it. */
export interface PodSpec {
  /** The pod's identity within svc: `edit-<workspace>-<user>` or `run-<app>-<version>` (see podKey). */
  key: string;
  /** A fresh id per launch (a relaunch of the same key gets another): names the working directory or the pod object. */
  id: string;
  mode: PodMode;
  workspaceId: string;
  appId: string;
  /** The app's name: the notebook's file name (`<name>.py`). */
  appName: string;
  /** The published version a run pod serves; null for an edit pod. */
  version: number | null;
  /** The notebook source the pod starts with (the version for a run pod, the draft for an edit pod). */
  source: string;
}

/** Where a started pod answers and how its launcher finds it again (from any replica). */
export interface PodHandle {
  /** Base URL of the pod's HTTP server, e.g. http://127.0.0.1:41234 */
  address: string;
  /** Launcher-specific reference (a process group id and directory, or a pod name), JSON-safe. */
  ref: Record<string, string | number>;
}

/**
 * A way of running pods (`apps.pod.launcher`). start() returns once the pod is created with its
 * address (giving up at `deadlineMs`, having removed what it created); readiness is judged by the
 * caller polling that address. stop() is idempotent.
 */
export interface PodLauncher {
  readonly kind: 'subprocess' | 'cluster';
  start(spec: PodSpec, deadlineMs?: number): Promise<PodHandle>;
  stop(handle: PodHandle): Promise<void>;
  /** Puts another app's source into a running edit pod (an author opening a second app); optional. */
  deliver?(handle: PodHandle, appName: string, source: string): Promise<void>;
  /** Why a started pod can no longer become ready (its process exited), or null while it may. */
  failure?(handle: PodHandle): string | null | Promise<string | null>;
  /**
   * The pods this instance started that cannot outlive the service's process (subprocess pods are
   * its children), which close() stops. A launcher without it (cluster: pods are API objects that
   * any replica reaches, stops when idle and outlive a restart) stops nothing at close().
   */
  running?(): PodHandle[];
  close?(): Promise<void>;
}

/** The pod a session needs. Keys are made of ids (UUIDs) and a number, so they are safe in Redis keys and names. */
export function podKey(b: Pick<AppBinding, 'mode' | 'workspaceId' | 'userId' | 'appId' | 'version'>): string {
  if (b.mode === 'edit') return `edit-${b.workspaceId}-${b.userId}`;
  if (b.version === null) throw new Error('a run session is bound to a published version');
  return `run-${b.appId}-${b.version}`;
}

export interface IdleLimits { idleSecs: number; runIdleSecs: number }

/** Seconds a pod of this mode may stay unused before it is stopped. */
export const idleLimitSecs = (mode: PodMode, l: IdleLimits) => (mode === 'edit' ? l.idleSecs : l.runIdleSecs);

/** Whether a pod last used at `usedMs` is idle at `nowMs` (strictly past its limit). */
export function isIdle(mode: PodMode, usedMs: number, nowMs: number, l: IdleLimits): boolean {
  return nowMs - usedMs > idleLimitSecs(mode, l) * 1000;
}

/**
 * Whether a new session may join a pod that already has `open` live sessions. Only run pods are
 * capped (an edit pod has one author); a session already counted is never refused.
 */
export function admitsSession(mode: PodMode, open: number, cap: number, alreadyCounted: boolean): boolean {
  return mode === 'edit' || alreadyCounted || open < cap;
}

/** The 503 message of a full run pod (SPEC 4: the new session gets 503). */
export const fullMessage = (cap: number) => `this app already serves ${cap} sessions (apps.pod.run_session_cap): try again later`;

/**
 * The only request targets passed to a pod: origin-form (RFC 9112 3.2.1), a path starting with one
 * `/` and its query. `//host/...` and `/\host/...` (which URL parsers read as another host),
 * absolute-form (`http://host/...`), authority-form (`host:port`) and `*` are refused.
 */
export function isOriginForm(target: string): boolean {
  return /^\/(?![/\\])/.test(target);
}

export const NOT_ORIGIN_FORM = 'the request target must be a path starting with a single / (origin-form)';

/**
 * Where a request to a pod goes: always the pod's own host and port (from its handle, never from
 * the request), with the request's path and query as the target, sent as is (never resolved
 * against the pod's address, which would let `//host/` name another host). Null when the target is
 * not origin-form.
 */
export function podRequestTarget(address: string, target: string): { protocol: string; hostname: string; port: string; path: string } | null {
  if (!isOriginForm(target)) return null;
  const pod = new URL(address);
  return { protocol: pod.protocol, hostname: pod.hostname.replace(/^\[|\]$/g, ''), port: pod.port, path: target };
}
