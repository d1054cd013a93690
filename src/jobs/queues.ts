// The BullMQ queues, one per job kind, created on first use. Producers (the API) and consumers
// (workers in `svc serve` with the loops enabled) share these names and the key prefix.
import { createRequire } from 'node:module';
import type { Queue, ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';

// bullmq is loaded on first use: `svc openapi` and one-shot commands never need it.
const require = createRequire(import.meta.url);
let QueueClass: typeof Queue | undefined;

export const QUEUE = {
  /** start / advance / kill of an execution: the orchestrator */
  executions: 'executions',
  /** one job per task-run attempt: the leaf tasks */
  taskRuns: 'task-runs',
  /** cron tick and flow-trigger evaluation */
  triggers: 'triggers',
  /** retention pruning and other housekeeping */
  maintenance: 'maintenance',
  /** audit batches handed over by the API */
  audit: 'audit',
} as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

export class Queues {
  private readonly open = new Map<string, Queue>();

  constructor(private readonly redis: () => Redis, readonly prefix: string) {}

  /** Connection options for a Worker or QueueEvents (BullMQ duplicates it for blocking calls). */
  connection(): ConnectionOptions {
    return this.redis() as unknown as ConnectionOptions;
  }

  get(name: QueueName): Queue {
    let q = this.open.get(name);
    if (!q) {
      QueueClass ??= (require('bullmq') as typeof import('bullmq')).Queue;
      q = new QueueClass(name, { connection: this.connection(), prefix: this.prefix });
      q.on('error', () => {});
      this.open.set(name, q);
    }
    return q;
  }

  all(): Queue[] {
    return Object.values(QUEUE).map((n) => this.get(n));
  }

  async close(): Promise<void> {
    await Promise.all([...this.open.values()].map((q) => q.close().catch(() => {})));
    this.open.clear();
  }
}
