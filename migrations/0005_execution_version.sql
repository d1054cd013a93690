-- Optimistic concurrency for the orchestrator: every orchestration step and every kill request
-- bumps an execution's version, and a step applies only if the version it planned from is still
-- current (see src/workflows/orchestrator.ts).
ALTER TABLE executions ADD COLUMN version bigint NOT NULL DEFAULT 0;
