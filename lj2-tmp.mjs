import { DuckDBInstance } from '@duckdb/node-api';
const N = 3000;
const sql = (i) => `SELECT ${i} AS i, 'row ' || ${i} AS label, ${i} * 2 AS twice`;
const pdb = await DuckDBInstance.create(':memory:', { threads: '1' });
const pc = await pdb.connect();
const wdb = await DuckDBInstance.create(':memory:', { threads: process.env.WT ?? '2' });
const wc = await wdb.connect();
const st = await pc.prepare('SELECT json_serialize_sql($1::VARCHAR)');
const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1].toFixed(3);
const h = [], p = [], s = [], f = [], tot = [];
for (let i = 0; i < N; i++) {
  const t0 = performance.now();
  st.bindVarchar(1, sql(i)); const r = await st.run(); String(r.getChunk(0).getRowValues(0)[0]);
  const t1 = performance.now();
  const pr = await wc.prepare(sql(i));
  const t2 = performance.now();
  const res = await pr.stream();
  const t3 = performance.now();
  await res.fetchChunk(); await res.fetchChunk(); pr.destroySync();
  const t4 = performance.now();
  h.push(t1 - t0); p.push(t2 - t1); s.push(t3 - t2); f.push(t4 - t3); tot.push(t4 - t0);
  if (process.env.GAP) await new Promise((r) => setTimeout(r, 0));
}
console.log('UV', process.env.UV_THREADPOOL_SIZE, 'WT', process.env.WT, 'hop', med(h), 'prepare', med(p), 'stream', med(s), 'fetch2', med(f), 'total', med(tot));
