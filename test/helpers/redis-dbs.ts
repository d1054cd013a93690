// The Redis database of each test file and benchmark that runs `svc serve` as a process. Such a
// server's workers take jobs from every server on the same database and key prefix (`svc`), so a
// file running beside another (the runner runs two at once), or a benchmark beside the tests,
// would take and lose the other's queries, audit batches and workflow steps. In-process services
// get a prefix of their own instead (helpers/app.ts). Database 0 is left to files whose servers
// queue nothing another could take.
import { Redis } from 'ioredis';

const DBS = {
  serve: 1, adminReset: 2, appsServe: 3, serveDev: 4,
  workflowReaper: 7, queriesStalled: 8, benchWorkflows: 9, benchForeach: 10, queriesThreadpool: 11, bench: 12, appsServeShutdown: 13,
} as const;

export const redisUrl = (owner: keyof typeof DBS): string => `redis://127.0.0.1:6379/${DBS[owner]}`;

/** Empties a Redis database (a file's own, before and after it). */
export async function flushRedis(url: string): Promise<void> {
  const r = new Redis(url);
  await r.flushdb();
  await r.quit();
}
