// Catalog tables in the embedded engine are `iceberg.<namespace>.<table>`, the name Trino engines
// svc provisions give them (their catalog file is iceberg.properties). A nested namespace is one
// schema whose name joins the levels with dots, as Trino writes it (`iceberg."a.b".t`); a level
// that itself holds a dot cannot be named this way (the catalog allows it; Trino cannot name it
// either). Iceberg types map to DuckDB's as DuckDB's own Iceberg reader maps them.
import { unsupported } from '../../iceberg/errors.js';
import type { IcebergType } from '../../iceberg/types.js';
import { quoteIdent } from '../sql/lexer.js';

export const CATALOG = 'iceberg';

export const levelsOf = (schema: string): string[] => schema.split('.');
export const schemaOf = (levels: string[]): string => levels.join('.');
/** `iceberg."a.b"."t"`, quoted for any name. */
export const qualifiedName = (levels: string[], name: string): string => `${CATALOG}.${quoteIdent(schemaOf(levels))}.${quoteIdent(name)}`;

/** The DuckDB type of an Iceberg type (nested types with their fields' names). */
export function duckType(t: IcebergType): string {
  switch (t.type) {
    case 'struct': return `STRUCT(${t.fields.map((f) => `${quoteIdent(f.name)} ${duckType(f.type)}`).join(', ')})`;
    case 'list': return `${duckType(t.element)}[]`;
    case 'map': return `MAP(${duckType(t.key)}, ${duckType(t.value)})`;
    case 'boolean': return 'BOOLEAN';
    case 'int': return 'INTEGER';
    case 'long': return 'BIGINT';
    case 'float': return 'FLOAT';
    case 'double': return 'DOUBLE';
    case 'decimal': return `DECIMAL(${t.precision}, ${t.scale})`;
    case 'date': return 'DATE';
    case 'time': return 'TIME';
    case 'timestamp': return 'TIMESTAMP';
    case 'timestamptz': return 'TIMESTAMP WITH TIME ZONE';
    case 'timestamp_ns': return 'TIMESTAMP_NS';
    case 'timestamptz_ns': return 'TIMESTAMP WITH TIME ZONE';
    case 'string': return 'VARCHAR';
    case 'uuid': return 'UUID';
    case 'fixed': case 'binary': return 'BLOB';
    case 'unknown': return 'INTEGER';
    default: throw unsupported(`the embedded engine cannot read Iceberg type ${t.type}`);
  }
}
