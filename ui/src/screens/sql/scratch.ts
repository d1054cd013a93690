// The embedded engine's scratch tables, read as any query is (POST .../queries on `embedded`):
// the columns of the workspace database's own tables from information_schema.columns (catalog
// tables, attached as `iceberg`, are listed from the catalog instead). The preview holds the first
// engine.preview_rows rows; a longer answer is read whole from the result's JSON download.
import { api, ok, ApiError } from '../../api/client';
import { QUERY_ENDED, resultUrl } from './queries';

export interface ScratchColumn { schema: string; table: string; column: string; type: string }

export const SCRATCH_SQL = 'SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns '
  + 'WHERE table_catalog = current_database() ORDER BY table_schema, table_name, ordinal_position';

const WAIT_MS = 5000;

export async function runToEnd(ws: string): Promise<ScratchColumn[]> {
  let q = await ok(api.POST('/api/workspaces/{ws}/queries', { params: { path: { ws } }, body: { sql: SCRATCH_SQL, engine: 'embedded', wait_ms: WAIT_MS } }));
  for (let i = 0; i < 20 && !QUERY_ENDED.has(q.state); i++) {
    await new Promise((r) => setTimeout(r, 500));
    q = await ok(api.GET('/api/workspaces/{ws}/queries/{id}', { params: { path: { ws, id: q.id } } }));
  }
  if (q.state !== 'SUCCEEDED') throw new ApiError(0, 'query', q.error ?? `the embedded engine answered ${q.state}`);
  let rows = q.preview ?? [];
  if (q.rows !== null && rows.length < q.rows) {
    const res = await fetch(resultUrl(ws, q.id, 'json'), { credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) throw new ApiError(res.status, 'error', `the scratch tables could not be read (status ${res.status})`);
    rows = ((await res.json()) as Array<Record<string, unknown>>).map((r) => [r.table_schema, r.table_name, r.column_name, r.data_type]);
  }
  return rows.map((r) => ({ schema: String(r[0]), table: String(r[1]), column: String(r[2]), type: String(r[3]) }));
}
