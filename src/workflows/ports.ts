// What the workflow core needs from the outside, declared here in its own words and implemented
// below it never: src/jobs/workflow-queue.ts implements WorkflowQueue on BullMQ, and services.ts
// hands that implementation in as services.workflowQueue. workflows/ thus never imports jobs/.
import type { LeafDispatch, Snapshot } from './orchestrator.js';

export interface WorkflowQueue {
  /**
   * Asks a worker to (re)evaluate an execution. A start job is idempotent by id (recovery may ask
   * again) and may carry the execution as created (`created`) so the first step need not read it.
   * `requeued` counts the sweep's new starts of it after failed ones (the sweep's cap).
   */
  advance(executionId: string, reason: 'start' | 'advance' | 'kill', created?: Snapshot, requeued?: number): Promise<void>;
  /** Queues leaf task runs, each its next attempt, idempotent per (task run, attempt). */
  dispatch(leaves: LeafDispatch[]): Promise<void>;
  /** Announces an ended execution, once (flow triggers of other flows react to it). */
  ended(executionId: string): Promise<void>;
  /** Whether the queue is connected now: a request fails fast (503) rather than waiting when not. */
  available(): boolean;
}
