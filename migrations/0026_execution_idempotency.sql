-- Idempotency keys of execution starts (docs/workflows.md "Idempotency-Key"): a start or webhook
-- call repeated with the same key, in the same workspace and for the same flow, answers the
-- execution the first call created instead of creating another. A key is kept 24 hours (pruned
-- hourly by the maintenance loop); it goes with its execution.
CREATE TABLE execution_idempotency (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  namespace    text NOT NULL,
  flow_id      text NOT NULL,
  key          text NOT NULL,
  execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, namespace, flow_id, key)
);
CREATE INDEX execution_idempotency_created ON execution_idempotency (created_at);
CREATE INDEX execution_idempotency_execution ON execution_idempotency (execution_id);
