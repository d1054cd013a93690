// The app pod lifecycle (docs/apps.md "Pods"), over the PodStore (Redis) and a PodLauncher:
//   open()      the apps listener: seat the session (run_session_cap), find the session's pod,
//               ask for a launch when there is none, wait for it up to ready_timeout_secs;
//   launch()    the `app-pods` job: start the pod, poll its HTTP port until it answers;
//   stopIdle()  the `app-pods` stop job: stop every pod unused past its idle time.
// A launch is asked for once per pod: a claim key (expiring after the ready timeout plus a
// minute) marks it in progress, so a launch whose worker vanished is asked for again later.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { DomainError } from '../errors.js';
import type { AppBinding } from './tickets.js';
import type { PodStore, PodRecord } from './pod-store.js';
import { fullMessage, isIdle, podKey, type IdleLimits, type PodHandle, type PodLauncher } from './pods.js';

export interface PodSettings extends IdleLimits {
  readyTimeoutSecs: number;
  runSessionCap: number;
  /** A session unused this long holds no seat (apps.session_idle_secs: its token has ended). */
  sessionIdleSecs: number;
}

/** What a launch needs from the apps resource: the app's name and the source to start with. */
export type SourceOf = (rec: PodRecord) => Promise<{ appName: string; source: string }>;

export interface PodManagerDeps {
  store: PodStore;
  clock: Clock;
  settings: PodSettings;
  /** Queues the launch job of pod `key`, launch `id` (jobs/app-pod-worker.ts). */
  enqueueLaunch(key: string, id: string): Promise<void>;
  log: Logger;
}

const POLL_MS = 200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const notReadyMessage = (secs: number) => `the app did not start within ${secs} s (apps.pod.ready_timeout_secs): open it again in a moment`;

export class PodManager {
  constructor(private readonly d: PodManagerDeps) {}

  private get claimMs() { return this.d.settings.readyTimeoutSecs * 1000 + 60_000; }

  /**
   * The ready pod of a session (a hash of its app token), launching it if needed. Throws 503 when
   * a run pod is full or the launch failed, 504 when it is not ready in time.
   */
  async open(b: AppBinding, session: string): Promise<PodRecord & { handle: PodHandle }> {
    const s = this.d.settings;
    const key = podKey(b);
    const now = this.d.clock.now().getTime();
    const cap = b.mode === 'run' ? s.runSessionCap : null;
    if (!(await this.d.store.admit(key, session, now, s.sessionIdleSecs * 1000, cap))) {
      this.d.log.info({ pod: key, cap }, 'app session refused: run pod full');
      throw new DomainError('unavailable', fullMessage(s.runSessionCap));
    }
    const deadline = Date.now() + s.readyTimeoutSecs * 1000;
    let waitingFor: string | undefined;
    for (;;) {
      const rec = await this.d.store.get(key);
      if (rec?.state === 'ready' && rec.handle) {
        return (await this.d.store.update(key, rec.id, { used: this.d.clock.now().getTime() }) ?? rec) as PodRecord & { handle: PodHandle };
      }
      if (rec?.state === 'failed' && rec.id === waitingFor) throw new DomainError('unavailable', rec.message ?? 'the app could not start');
      // Nothing there, a failure from before this request, or a launch nobody is running any more.
      const stale = !rec || rec.state === 'failed' || !(await this.d.store.claimed(key));
      if (stale && (await this.d.store.claim(key, this.claimMs))) waitingFor = await this.ask(b, key, rec);
      else if (rec && !waitingFor) waitingFor = rec.id;
      if (Date.now() >= deadline) throw new DomainError('timeout', notReadyMessage(s.readyTimeoutSecs));
      await sleep(POLL_MS);
    }
  }

  private async ask(b: AppBinding, key: string, old: PodRecord | null): Promise<string> {
    const now = this.d.clock.now().getTime();
    const rec: PodRecord = {
      key, id: randomUUID(), mode: b.mode, state: 'launching', workspaceId: b.workspaceId, appId: b.appId,
      userId: b.userId, version: b.version, launchedAt: now, used: now,
    };
    // A failed launch leaves nothing running (launch() stopped it); a stale one may have.
    if (old?.handle && old.state === 'launching') this.d.log.warn({ pod: key }, 'app pod launch lost its worker: launching again');
    await this.d.store.put(rec);
    await this.d.enqueueLaunch(key, rec.id);
    this.d.log.info({ pod: key, launch: rec.id, mode: b.mode }, 'app pod launch queued');
    return rec.id;
  }

  /** The `launch` job: starts the pod and waits until its HTTP port answers (any status). */
  async launch(launcher: PodLauncher, key: string, id: string, sourceOf: SourceOf): Promise<'ready' | 'failed' | 'superseded'> {
    const rec = await this.d.store.get(key);
    if (!rec || rec.id !== id || rec.state !== 'launching') return 'superseded';
    const fail = async (message: string, handle?: PodHandle) => {
      if (handle) await launcher.stop(handle).catch((err: Error) => this.d.log.warn({ pod: key, err: err.message }, 'app pod stop failed'));
      await this.d.store.update(key, id, { state: 'failed', message, handle: undefined });
      await this.d.store.release(key);
      this.d.log.warn({ pod: key, launch: id, reason: message }, 'app pod launch failed');
      return 'failed' as const;
    };
    let handle: PodHandle;
    const deadline = Date.now() + this.d.settings.readyTimeoutSecs * 1000;
    try {
      const { appName, source } = await sourceOf(rec);
      handle = await launcher.start({ key, id, mode: rec.mode, workspaceId: rec.workspaceId, appId: rec.appId, appName, version: rec.version, source }, deadline);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'not_found') return fail('the app could not start: it was deleted');
      // The launcher's own text (an API server's answer) goes to the log, not to the viewer.
      this.d.log.warn({ pod: key, err: (err as Error).message }, 'app pod did not start');
      return fail('the app could not start: its pod was not created');
    }
    await this.d.store.update(key, id, { handle, delivered: [rec.appId] });
    while (Date.now() < deadline) {
      const gone = await launcher.failure?.(handle);
      if (gone) return fail(`the app could not start: ${gone}`, handle);
      if (await answers(handle.address)) {
        const now = this.d.clock.now().getTime();
        if (!(await this.d.store.update(key, id, { state: 'ready', used: now }))) {
          await launcher.stop(handle);
          return 'superseded';
        }
        await this.d.store.release(key);
        this.d.log.info({ pod: key, launch: id, launcher: launcher.kind }, 'app pod ready');
        return 'ready';
      }
      await sleep(POLL_MS);
    }
    return fail(notReadyMessage(this.d.settings.readyTimeoutSecs), handle);
  }

  /** The stop job: stops every pod unused past idle_secs (edit) or run_idle_secs (run). */
  async stopIdle(launcher: PodLauncher): Promise<{ stopped: number }> {
    const now = this.d.clock.now().getTime();
    let stopped = 0;
    for (const key of await this.d.store.keys()) {
      const rec = await this.d.store.get(key);
      if (!rec) { await this.d.store.remove(key); continue; }
      if (!isIdle(rec.mode, rec.used, now, this.d.settings)) continue;
      // A launch in progress is left to finish (its claim still holds); its first use makes it fresh.
      if (rec.state === 'launching' && (await this.d.store.claimed(key))) continue;
      await this.stopPod(launcher, key, rec);
      stopped += 1;
      this.d.log.info({ pod: key, launch: rec.id, idle_secs: Math.round((now - rec.used) / 1000) }, 'app pod stopped: idle');
    }
    return { stopped };
  }

  /**
   * The `stop-app` job: stops the run pods of a deleted app, whose viewers would otherwise go on
   * using it until run_idle_secs after their last request. Edit pods are the author's and serve
   * other apps too: they keep the deleted app's file until they idle out.
   */
  async stopApp(launcher: PodLauncher, appId: string): Promise<{ stopped: number }> {
    let stopped = 0;
    for (const key of await this.d.store.keys()) {
      if (!key.startsWith(`run-${appId}-`)) continue;
      await this.stopPod(launcher, key, await this.d.store.get(key));
      stopped += 1;
      this.d.log.info({ pod: key }, 'app pod stopped: app deleted');
    }
    return { stopped };
  }

  /**
   * An edit pod serves every app its author opens in the workspace: the first session of another
   * app puts that app's draft into the pod (once per launch).
   */
  async deliver(launcher: PodLauncher, rec: PodRecord & { handle: PodHandle }, appId: string, sourceOf: SourceOf): Promise<void> {
    if (rec.delivered?.includes(appId) || !launcher.deliver) return;
    const { appName, source } = await sourceOf({ ...rec, appId });
    await launcher.deliver(rec.handle, appName, source);
    await this.d.store.update(rec.key, rec.id, { delivered: [...(rec.delivered ?? []), appId].slice(-1_000) });
  }

  /** Stops every recorded pod (tests, and an operator draining the launcher). */
  async stopAll(launcher: PodLauncher): Promise<void> {
    for (const key of await this.d.store.keys()) await this.stopPod(launcher, key, await this.d.store.get(key));
  }

  /**
   * Shutdown (the pod worker's close, on SIGTERM or SIGINT of `svc serve`): closes the launcher,
   * which stops every pod it started that cannot outlive this process (all at once, each bounded),
   * then forgets their records so that no replica proxies to a dead port or later signals a
   * process id that may have been reused. The records are best effort: given up after `forgetMs`
   * (Redis may be what is failing), the processes are stopped whatever Redis does.
   */
  async closeLauncher(launcher: PodLauncher, forgetMs = 5_000): Promise<void> {
    const stopped = new Set((launcher.running?.() ?? []).map((h) => String(h.ref.id)));
    try {
      await launcher.close?.();
    } finally {
      if (stopped.size) await this.forgetLaunches(stopped, forgetMs);
    }
  }

  private async forgetLaunches(ids: Set<string>, withinMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const forget = (async () => {
      for (const key of await this.d.store.keys()) {
        const rec = await this.d.store.get(key);
        if (rec && ids.has(rec.id)) await this.d.store.remove(key);
      }
      this.d.log.info({ pods: ids.size }, 'app pods stopped: the service is shutting down');
    })();
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.d.log.warn({ pods: ids.size, within_ms: withinMs }, 'app pods stopped at shutdown, but their records were not removed in time');
        resolve();
      }, withinMs);
    });
    try {
      await Promise.race([forget.catch((err: Error) => this.d.log.warn({ err: err.message }, 'app pods stopped at shutdown, but their records were not removed')), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops a recorded pod's process, if it got one, and forgets the pod. */
  private async stopPod(launcher: PodLauncher, key: string, rec: PodRecord | null | undefined): Promise<void> {
    if (rec?.handle) await launcher.stop(rec.handle);
    await this.d.store.remove(key);
  }
}

/** Whether anything answers HTTP at the address (the pod is ready once it does). */
async function answers(address: string): Promise<boolean> {
  try {
    const res = await fetch(address, { signal: AbortSignal.timeout(2_000), redirect: 'manual' });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}
