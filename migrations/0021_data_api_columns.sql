-- The result columns of each endpoint version, read when it is published (a zero-row run), so the
-- generated OpenAPI document types the rows. NULL when the engine could not be asked then.
ALTER TABLE data_api_versions ADD COLUMN columns jsonb;
