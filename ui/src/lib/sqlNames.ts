// Names as SQL reads them on the embedded engine and on Trino alike (ARCHITECTURE.md: one name
// for one thing): a catalog table is `iceberg.<namespace>.<table>`, a nested namespace one quoted
// identifier (`iceberg."a.b"."My Table"`, as Trino writes it). An identifier stays plain when it
// is lower-case letters, digits and `_` and not a reserved word; anything else is double-quoted
// (case kept, `"` doubled).
const RESERVED = new Set(('all and any array as asc between both by case cast check collate column constraint create cross current_date '
  + 'current_time current_timestamp default delete desc describe distinct drop else end escape except exists extract false fetch for foreign '
  + 'from full grant group having in inner insert intersect interval into is join lateral leading left like limit localtime localtimestamp '
  + 'natural not null offset on only or order outer over partition primary qualify range recursive references right rollup row rows select '
  + 'some table then to trailing true union unique unnest update using values when where window with').split(' '));

export function ident(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) && !RESERVED.has(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/** `iceberg.<namespace>.<table>`: the levels of a nested namespace joined into one identifier. */
export function icebergName(namespace: string[], table?: string): string {
  const parts = ['iceberg', ident(namespace.join('.'))];
  if (table !== undefined) parts.push(ident(table));
  return parts.join('.');
}

/** A scratch table of the embedded engine's own database: `<schema>.<table>` (`main.t`). */
export const scratchName = (schema: string, table: string): string => `${ident(schema)}.${ident(table)}`;
