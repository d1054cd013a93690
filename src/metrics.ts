// Prometheus metrics of one process: process metrics, HTTP request count and latency by route
// pattern and status, and the audit queue. A registry per Services object, so tests and replicas
// never share counters.
import { Registry, collectDefaultMetrics, Counter, Histogram } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  auditDropped: Counter;
  auditWritten: Counter;
  executionsEnded: Counter<'state'>;
  taskRunsEnded: Counter<'type' | 'state'>;
  /** queue wait + run of a task-run attempt, by task type */
  taskRunSeconds: Histogram<'type'>;
  /** from queued to picked up by a worker */
  jobWaitSeconds: Histogram<'queue'>;
  jobFailures: Counter<'queue'>;
  /** alert and report evaluations, by kind and outcome */
  automationEvaluations: Counter<'kind' | 'outcome'>;
  /** delivery attempts of notifications, by channel and resulting status */
  automationDeliveries: Counter<'channel' | 'status'>;
  /** Iceberg REST catalog requests, by the specification's operation id and HTTP status */
  catalogRequests: Counter<'operation' | 'status'>;
  catalogDuration: Histogram<'operation' | 'status'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  // prom-client's *_active_{handles,requests,resources}_total are gauges named like counters
  // (promtool: "non-counter metrics should not have _total suffix"); the same figures are the sum
  // of svc_nodejs_active_{handles,requests,resources} by type, so the misnamed copies go.
  for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`svc_nodejs_active_${kind}_total`);
  const labelNames = ['method', 'route', 'status'] as const;
  return {
    registry,
    httpRequests: new Counter({ name: 'svc_http_requests_total', help: 'HTTP requests by method, route pattern and status', labelNames, registers: [registry] }),
    httpDuration: new Histogram({
      name: 'svc_http_request_duration_seconds', help: 'HTTP request latency by method, route pattern and status', labelNames, registers: [registry],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    auditDropped: new Counter({ name: 'svc_audit_events_dropped_total', help: 'authorization audit events dropped because the in-memory queue was full or a batch failed', registers: [registry] }),
    auditWritten: new Counter({ name: 'svc_audit_events_written_total', help: 'authorization audit events written', registers: [registry] }),
    executionsEnded: new Counter({ name: 'svc_workflow_executions_ended_total', help: 'workflow executions that ended, by final state', labelNames: ['state'] as const, registers: [registry] }),
    taskRunsEnded: new Counter({ name: 'svc_workflow_task_runs_ended_total', help: 'task-run attempts that ended, by task type and state', labelNames: ['type', 'state'] as const, registers: [registry] }),
    taskRunSeconds: new Histogram({
      name: 'svc_workflow_task_run_seconds', help: 'duration of task-run attempts by task type', labelNames: ['type'] as const, registers: [registry],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600],
    }),
    jobWaitSeconds: new Histogram({
      name: 'svc_queue_job_wait_seconds', help: 'time from a job being queued (or due) to a worker taking it, by queue', labelNames: ['queue'] as const, registers: [registry],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
    }),
    jobFailures: new Counter({ name: 'svc_queue_job_failures_total', help: 'jobs whose processor failed, by queue', labelNames: ['queue'] as const, registers: [registry] }),
    automationEvaluations: new Counter({ name: 'svc_automation_evaluations_total', help: 'alert and report evaluations, by kind and outcome (ok, triggered, error, delivered)', labelNames: ['kind', 'outcome'] as const, registers: [registry] }),
    automationDeliveries: new Counter({ name: 'svc_automation_delivery_attempts_total', help: 'delivery attempts of alert and report notifications, by channel and resulting status (delivered, pending = to be retried, failed, refused by the SSRF gate)', labelNames: ['channel', 'status'] as const, registers: [registry] }),
    catalogRequests: new Counter({ name: 'svc_catalog_requests_total', help: 'Iceberg REST catalog requests, by operation (the specification\'s operationId: loadTable, updateTable, ...) and HTTP status', labelNames: ['operation', 'status'] as const, registers: [registry] }),
    catalogDuration: new Histogram({
      name: 'svc_catalog_request_duration_seconds', help: 'Iceberg REST catalog request latency, by operation and HTTP status', labelNames: ['operation', 'status'] as const, registers: [registry],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
  };
}
