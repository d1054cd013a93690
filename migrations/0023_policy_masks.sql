-- Column masks and row filters (Ranger policy types 1 and 2) beside access items: a policy holds
-- one kind of item (access: allow/deny, mask, row filter), decided by which of these is set.
ALTER TABLE policies
  ADD COLUMN mask_items       jsonb NOT NULL DEFAULT '[]'::jsonb,
  ADD COLUMN row_filter_items jsonb NOT NULL DEFAULT '[]'::jsonb;
