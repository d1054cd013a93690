-- Who an alert or report runs as (docs/alerts.md "Who a report renders as"): the person who last
-- set what it produces (content or condition, SQL, engine) or where it goes (recipients). A
-- screenshot renders with a session of that person and their rights at the time of the render;
-- changing either re-binds it to whoever changed it. Rows before this migration run as their
-- creator, as they rendered until now.
ALTER TABLE automations ADD COLUMN run_as uuid REFERENCES users (id) ON DELETE SET NULL;
UPDATE automations SET run_as = created_by;
