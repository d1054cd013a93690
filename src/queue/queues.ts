// The registry of BullMQ queues: every queue is declared here once, with its payload type, what it
// carries and the options of its jobs (retention above all), so that producers (the API, the
// orchestrator) and consumers (workers in `svc serve` with the loops enabled) share one name, one
// key prefix and one retention. docs/queues.md says how to declare a new one.
import { createRequire } from 'node:module';
import type { Queue, ConnectionOptions, JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { DependencyUnavailable } from '../errors.js';
import { within } from '../util/deadline.js';
import type { AuditBatch } from '../audit/sink.js';

// bullmq is loaded on first use: `svc openapi` and one-shot commands never need it.
const require = createRequire(import.meta.url);
let QueueClass: typeof Queue | undefined;

/** A declared queue. `P` is the payload of its jobs (a type only: nothing checks it at run time). */
export interface QueueDef<P = unknown> {
  readonly name: string;
  /** what the queue carries (shown in docs/queues.md and the queue dashboard's list) */
  readonly description: string;
  /** options of the jobs producers add (merged under the producer's own with jobOptions()) */
  readonly jobOptions: JobsOptions;
  /** options of the jobs a job scheduler adds (periodic work), when the queue has schedulers */
  readonly scheduledJobOptions?: JobsOptions;
  /** the dashboard shows it but cannot add, pause, retry or clean its jobs */
  readonly readOnly?: boolean;
  /** phantom field carrying P; never set */
  readonly __payload?: P;
}

export function defineQueue<P>(def: Omit<QueueDef<P>, '__payload'>): QueueDef<P> {
  return Object.freeze({ ...def });
}

/** Job options of a queue's jobs: the declared ones, then the producer's (a job id, a delay). */
export function jobOptions(def: QueueDef<unknown>, extra: JobsOptions = {}): JobsOptions {
  return { ...def.jobOptions, ...extra };
}

// Retention, in one place. Ordinary jobs keep the last 1,000 completed (the dashboard's history)
// and more failed ones (5,000) for diagnosis; periodic housekeeping keeps a short history.
const KEEP = { removeOnComplete: { count: 1_000 }, removeOnFail: { count: 5_000 } } as const;
const SCHEDULED = { removeOnComplete: 100, removeOnFail: 100 } as const;
/** Sweeps that run every reaper interval: a short history is enough. */
const SWEEPS = { removeOnComplete: 10, removeOnFail: 10 } as const;
const RETRIED = { attempts: 5, backoff: { type: 'exponential', delay: 1_000 } } as const;
/**
 * Workflow jobs whose processor threw: an infrastructure error (PostgreSQL or Redis gone for a
 * while), never a task's own failure, which is recorded as the run's outcome. 8 attempts 1, 2, 4 ...
 * 64 s apart ride out about two minutes of outage; past that, the sweep re-queues the work
 * (docs/workflows.md "Recovery").
 */
const INFRA_RETRIED = { attempts: 8, backoff: { type: 'exponential', delay: 1_000 } } as const;

/** Payload of the `executions` queue; `created` is the execution as created (a start job). */
/** Payload of the `executions` queue; `requeued`: how many times the sweep queued this start again after its job failed. */
export interface ExecutionJob { executionId: string; created?: unknown; requeued?: number }
/**
 * Payload of the `task-runs` and `instant-runs` queues: `attempt` is the attempt the job runs; `instant` whether the type is INSTANT (such jobs go to `instant-runs`);
 * `requeued` how many times the sweep queued this attempt again after its job failed for good.
 */
export interface TaskRunJobData { taskRunId: string; executionId: string; attempt?: number; instant?: boolean; requeued?: number }
/** Payload of an `instant-runs` job named `runs`: instant attempts queued together, run by one worker (docs/workflows.md "Instant task runs"). */
export interface InstantRunsBatch { runs: TaskRunJobData[] }
/** Payload of the `queries` queue: `run` names the query; the `sweep` and `retention` schedulers carry nothing. */
export interface QueryJob { queryId?: string }
/** Payload of the `engines` queue: the engine whose transition to run (the `sweep` job carries ''). */
export interface EngineJobData { engineId: string }
/** Payload of the `triggers` queue: `execution-ended` names the execution, or the executions that ended together; `trigger-tick` carries nothing. */
export interface TriggerJob { executionId?: string; executionIds?: string[] }

/** Payload of the `automation` queue: `evaluate` names the alert or report and its slot; `automation-tick` carries nothing. */
export interface AutomationJob { automationId?: string; slot?: string; manual?: boolean; evaluationId?: string }
/**
 * Payload of the `catalog-purge` queue: a table dropped with purgeRequested, whose files are
 * removed: everything under `location`, and the `files` its metadata named outside it.
 */
export interface CatalogPurgeJob { tableId: string; workspace: string; table: string; location: string; files: string[]; requestedBy: string }
/** Payload of the `automation-deliveries` queue: one notification to one recipient. */
export interface DeliveryJob { deliveryId: string }

/** Payload of the `app-pods` queue: `launch` names the pod and its launch; the `stop-idle` scheduler carries nothing. */
/** launch: the pod key and launch id; stop-app: the deleted app whose run pods go. */
export interface AppPodJob { key?: string; id?: string; appId?: string }

export const QUEUES = {
  executions: defineQueue<ExecutionJob>({
    name: 'executions',
    description: 'start / advance / kill of an execution: the orchestrator (plus the recovery sweep)',
    jobOptions: { ...KEEP, ...INFRA_RETRIED },
    scheduledJobOptions: SWEEPS,
  }),
  taskRuns: defineQueue<TaskRunJobData>({
    name: 'task-runs',
    description: 'one job per task-run attempt: the leaf tasks that hold a lease (at most workflow.batch at once per worker)',
    jobOptions: { ...KEEP, ...INFRA_RETRIED },
  }),
  instantRuns: defineQueue<TaskRunJobData | InstantRunsBatch>({
    name: 'instant-runs',
    description: 'task-run attempts of the instant types (log, output, fail), run in memory without a lease, many at once: one job (run) per attempt, or one job (runs) for up to 50 queued together',
    jobOptions: { ...KEEP, ...INFRA_RETRIED },
  }),
  triggers: defineQueue<TriggerJob>({
    name: 'triggers',
    description: 'cron tick (trigger-tick) and flow-trigger evaluation (execution-ended)',
    jobOptions: { removeOnComplete: { count: 1_000 }, removeOnFail: { count: 1_000 }, ...RETRIED },
    scheduledJobOptions: SCHEDULED,
  }),
  maintenance: defineQueue<Record<string, never>>({
    name: 'maintenance',
    description: 'retention pruning and other housekeeping',
    jobOptions: SCHEDULED,
    scheduledJobOptions: SCHEDULED,
  }),
  audit: defineQueue<AuditBatch>({
    name: 'audit',
    description: 'audit batches handed over by the API',
    // an hour of completed batches is enough to answer "was it written"; failures stay for diagnosis
    jobOptions: { removeOnComplete: { age: 3_600, count: 1_000 }, removeOnFail: { count: 5_000 }, ...RETRIED },
    readOnly: true,
  }),
  queries: defineQueue<QueryJob>({
    name: 'queries',
    description: 'recorded SQL queries (run), the sweep of runs whose replica stopped, result retention',
    // one attempt: a query may change data, so a lost run is recorded FAILED, never run again
    jobOptions: { ...KEEP, attempts: 1 },
    scheduledJobOptions: SWEEPS,
  }),
  engines: defineQueue<EngineJobData>({
    name: 'engines',
    description: 'provisioning transitions of query engines (up, stop, remove) and the sweep that re-queues lost ones',
    jobOptions: KEEP,
    scheduledJobOptions: SWEEPS,
  }),
  automation: defineQueue<AutomationJob>({
    name: 'automation',
    description: 'alerts and reports: the schedule tick (automation-tick) and one evaluation per claimed slot or manual run (evaluate)',
    // one attempt: a slot fires at most once (docs/alerts.md); the evaluation row makes a redelivery a no-op
    jobOptions: { ...KEEP, attempts: 1 },
    scheduledJobOptions: SCHEDULED,
  }),
  deliveries: defineQueue<DeliveryJob>({
    name: 'automation-deliveries',
    description: 'one notification to one recipient of an alert or report (webhook, Slack), retried with back-off',
    // 6 attempts: 5, 10, 20, 40, 80 s apart (docs/alerts.md "Delivery")
    jobOptions: { ...KEEP, attempts: 6, backoff: { type: 'exponential', delay: 5_000 } },
  }),
  catalogPurge: defineQueue<CatalogPurgeJob>({
    name: 'catalog-purge',
    description: 'files of catalog tables dropped with purgeRequested=true, removed from the object store (job id purge-<table id>)',
    jobOptions: { ...KEEP, ...RETRIED },
  }),
  appPods: defineQueue<AppPodJob>({
    name: 'app-pods',
    description: 'data-app pods: launch one (launch), stop the ones unused past their idle time (stop-idle) and those of a deleted app (stop-app)',
    // one attempt: the person waiting asks for a new launch when this one failed (docs/apps.md "Pods")
    jobOptions: { ...KEEP, attempts: 1 },
    scheduledJobOptions: SWEEPS,
  }),
} as const satisfies Record<string, QueueDef<any>>;

export type QueueKey = keyof typeof QUEUES;

/** The queue names by key (QUEUE.taskRuns === 'task-runs'). */
export const QUEUE = Object.freeze(Object.fromEntries(Object.entries(QUEUES).map(([k, d]) => [k, d.name]))) as { readonly [K in QueueKey]: string };
export type QueueName = string;

/** A job scheduler as declared by a loop (periodic work), kept so it can be asserted again. */
interface Scheduled { queue: string; id: string; every: number; template: { name: string; data?: unknown; opts?: JobsOptions } }

export class Queues {
  private readonly open = new Map<string, Queue>();
  /** The job schedulers this process declared: Redis restarted empty loses them (reassert()). */
  private readonly schedulers = new Map<string, Scheduled>();

  constructor(private readonly redis: () => Redis, readonly prefix: string, private readonly onError?: (queue: string, err: Error) => void) {}

  /**
   * Declares periodic work: upserts the job scheduler (idempotent, one job per period across
   * replicas) and remembers it, so reassert() can put it back after Redis lost its data.
   */
  async schedule(q: QueueDef<any> | QueueName, id: string, every: number, template: Scheduled['template']): Promise<void> {
    const queue = this.get(q);
    this.schedulers.set(`${queue.name}\u0000${id}`, { queue: queue.name, id, every, template });
    await queue.upsertJobScheduler(id, { every }, template);
  }

  /** Removes a job scheduler (its work is switched off) and forgets it. */
  async unschedule(q: QueueDef<any> | QueueName, id: string): Promise<void> {
    const queue = this.get(q);
    this.schedulers.delete(`${queue.name}\u0000${id}`);
    await queue.removeJobScheduler(id);
  }

  /**
   * Upserts every declared scheduler again: after Redis restarted empty, the sweeps, retention and
   * ticks come back without a restart of svc. Idempotent; answers how many were asserted.
   */
  async reassert(): Promise<number> {
    let n = 0;
    for (const s of [...this.schedulers.values()]) {
      try {
        await this.get(s.queue).upsertJobScheduler(s.id, { every: s.every }, s.template);
        n++;
      } catch (err) {
        this.onError?.(s.queue, err as Error);
      }
    }
    return n;
  }

  /** Connection options for a Worker or QueueEvents (BullMQ duplicates it for blocking calls). */
  connection(): ConnectionOptions {
    return this.redis() as unknown as ConnectionOptions;
  }

  /** The queue of a declaration (or of a declared name), opened on first use. */
  get<P = any>(q: QueueDef<P> | QueueName): Queue<P> {
    const name = typeof q === 'string' ? q : q.name;
    let queue = this.open.get(name);
    if (!queue) {
      QueueClass ??= (require('bullmq') as typeof import('bullmq')).Queue;
      queue = new QueueClass(name, { connection: this.connection(), prefix: this.prefix });
      // The shared Redis connection reports its own errors (services.ts); a queue repeats them.
      queue.on('error', (err) => this.onError?.(name, err));
      this.open.set(name, queue);
    }
    return queue as Queue<P>;
  }

  private watching = false;
  private wasReady = false;

  /**
   * Whether the Redis connection is up now (requests answer 503 at once rather than queue commands
   * for an outage). A connection still making its first connect counts as up: it is opened on
   * first use (nothing connects before `svc serve` listens), and the command waits for it.
   */
  available(): boolean {
    const r = this.redis();
    if (!this.watching) {
      this.watching = true;
      r.on('ready', () => { this.wasReady = true; });
    }
    if (r.status === 'ready') { this.wasReady = true; return true; }
    return !this.wasReady && (r.status === 'wait' || r.status === 'connecting' || r.status === 'connect');
  }

  /** How long a request waits for Redis to take a job. */
  static readonly REQUEST_WAIT_MS = 3_000;

  /**
   * An enqueue a request waits on: refused at once when Redis is down, and after
   * Queues.REQUEST_WAIT_MS when it does not answer (ioredis would hold the command for the whole
   * outage), as DependencyUnavailable (503 with Retry-After). The job may still be added later.
   */
  async forRequest<T>(add: () => Promise<T>, what: string): Promise<T> {
    if (!this.available()) throw new DependencyUnavailable('Redis', `the job queue is not connected: ${what} cannot be queued`);
    return within(add(), Queues.REQUEST_WAIT_MS, () => new DependencyUnavailable('Redis', `the job queue did not take ${what} within ${Queues.REQUEST_WAIT_MS} ms`));
  }

  /** Every declared queue, opened. */
  all(): Queue[] {
    return Object.values(QUEUES).map((d: QueueDef<unknown>) => this.get(d));
  }

  async close(): Promise<void> {
    await Promise.all([...this.open.values()].map((q) => q.close().catch((err: Error) => this.onError?.(q.name, err))));
    this.open.clear();
  }
}
