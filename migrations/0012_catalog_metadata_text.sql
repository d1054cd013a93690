-- Table and view metadata is kept as the exact JSON text written to the object store: jsonb would
-- reorder keys and, read back through JavaScript numbers, lose the digits of 64-bit snapshot ids.
ALTER TABLE catalog_tables ALTER COLUMN metadata TYPE text USING metadata::text;
