// Query states and shapes shared by the SQL console's parts.
import type { Body } from '../../api/types';

export type Query = Body<'/api/workspaces/{ws}/queries/{id}', 'get'>;
export type QuerySummary = Body<'/api/workspaces/{ws}/queries', 'get'>['queries'][number];
export const QUERY_ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** The result download of an ended query (the browser sends the session cookie; a GET needs no CSRF header). */
export const resultUrl = (ws: string, id: string, format: 'csv' | 'json' | 'parquet'): string =>
  `/api/workspaces/${encodeURIComponent(ws)}/queries/${encodeURIComponent(id)}/results?format=${format}`;

/** A cell as text: JSON values (big integers and dates already come as strings), null shown as NULL. */
export function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
