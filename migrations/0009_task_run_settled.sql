-- A step reads only the task runs it may still need (issue 10): the runs of a finished iteration
-- of an outermost foreach are `settled` and left out of the step's read, and the foreach run
-- keeps how many of its first iterations are settled, so a step's cost does not grow with them.
ALTER TABLE task_runs ADD COLUMN settled boolean NOT NULL DEFAULT false,
  ADD COLUMN settled_iterations integer NOT NULL DEFAULT 0;
CREATE INDEX task_runs_unsettled_idx ON task_runs (execution_id) WHERE NOT settled;
