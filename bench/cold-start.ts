// Cold start of `svc` commands (issue 27 point 8), each beside a baseline measured in the same run
// on the same machine, interleaved, with the issue's aims:
//   svc serve -> listening   vs a bare Node http server starting to listen        aim  5x
//   svc openapi              vs a bare Node process printing "{}"                 aim  5x
//   svc -V                   vs a bare Node process printing "{}"                 aim  3x
//   svc client list          vs a bare Node process querying PostgreSQL with pg   aim  3x
//                            (a command that touches the database: config, checks, migrations
//                            check, one query)
// Wall time is what a user and a scaling event wait for; CPU time (user + system of the process)
// is printed beside it because on a shared, loaded machine the wall ratio also measures the
// scheduler. Every svc run uses bin/svc.js on the built tree, as an operator does.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createTestDatabase } from '../test/helpers/db.js';
import { startS3 } from '../test/helpers/s3.js';
import { serviceEnv, SVC_BIN, runSvc, ROOT } from '../test/helpers/cli.js';
import { freePorts } from '../test/helpers/net.js';
import { redisUrl } from '../test/helpers/redis-dbs.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);

interface Sample { wallMs: number; cpuMs: number }

/**
 * CPU time of a live process: the sum over its threads of /proc's schedstat, in nanoseconds (its
 * stat's user + system count 10 ms clock ticks, too coarse beside a baseline of 20-30 ms).
 */
function cpuOf(pid: number): number {
  const threadMs = (tid: string) => {
    try { return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6; } catch { return 0; } // a thread that just ended
  };
  return readdirSync(`/proc/${pid}/task`).reduce((ms, tid) => ms + threadMs(tid), 0);
}

/**
 * Runs `node args` until `ready` matches its output (then kills it) or, without `ready`, until it
 * exits 0. One-shot commands run under `bash -c '...; times'`, whose second line is the CPU time
 * of the waited child.
 */
function measure(args: string[], env: Record<string, string>, ready: RegExp | null): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const wall = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const quoted = [process.execPath, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = ready
      ? spawn(process.execPath, args, { env, cwd: ROOT })
      : spawn('bash', ['-c', `${quoted} >/dev/null 2>/tmp/svc-bench-stderr.$$ || { cat /tmp/svc-bench-stderr.$$ >&2; exit 1; }; rm -f /tmp/svc-bench-stderr.$$; times >&2`], { env, cwd: ROOT });
    let out = '';
    let done = false;
    let wallMs = 0;
    child.stdout.on('data', (d: Buffer) => { out += d; check(); });
    child.stderr.on('data', (d: Buffer) => { out += d; check(); });
    function check() {
      if (!ready || done || !ready.test(out)) return;
      done = true;
      const cpuMs = cpuOf(child.pid!);
      child.kill('SIGKILL');
      resolve({ wallMs: wall(), cpuMs });
    }
    child.on('exit', (code) => {
      if (ready) { if (!done) reject(new Error(`exited ${code} before ready: ${out.slice(-2000)}`)); return; }
      wallMs = wall();
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited ${code}: ${out.slice(-2000)}`));
      // `times`: the shell's own line, then the children's: "0m0.071s 0m0.024s"
      const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/m.exec(out.trim().split('\n').slice(-1)[0]);
      if (!m) return reject(new Error(`no CPU times in: ${out.slice(-500)}`));
      resolve({ wallMs, cpuMs: (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000 });
    });
  });
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function main() {
  const db = await createTestDatabase('svc_bench');
  const s3 = await startS3();
  const env = serviceEnv(db.url, s3, { SVC_REDIS__URL: redisUrl('bench'), SVC_SERVER__HOST: '127.0.0.1', SVC_LOG__JSON: 'true' });
  try {
    const m = await runSvc(['migrate'], { env });
    if (m.code !== 0) throw new Error(m.stderr);
    const rows: Array<{ name: string; base: string; aim: number; xs: Sample[]; bs: Sample[] }> = [
      { name: 'svc serve -> listening', base: 'bare node http listen', aim: 5, xs: [], bs: [] },
      { name: 'svc openapi', base: 'bare node process', aim: 5, xs: [], bs: [] },
      { name: 'svc -V', base: 'bare node process', aim: 3, xs: [], bs: [] },
      { name: 'svc client list (database)', base: 'bare node + pg SELECT 1', aim: 3, xs: [], bs: [] },
    ];
    const pgUrl = JSON.stringify(db.url);
    for (let i = 0; i < RUNS; i++) {
      const [port, port2] = await freePorts(2);
      rows[0].xs.push(await measure([SVC_BIN, 'serve'], { ...env, SVC_SERVER__PORT: String(port) }, /"msg":"listening"/));
      rows[0].bs.push(await measure(['-e', `require('http').createServer((q,s)=>s.end()).listen(${port2},'127.0.0.1',()=>console.log('listening'))`], env, /listening/));
      rows[1].xs.push(await measure([SVC_BIN, 'openapi'], env, null));
      rows[1].bs.push(await measure(['-e', 'process.stdout.write("{}")'], env, null));
      rows[2].xs.push(await measure([SVC_BIN, '-V'], env, null));
      rows[2].bs.push(await measure(['-e', 'process.stdout.write("{}")'], env, null));
      rows[3].xs.push(await measure([SVC_BIN, 'client', 'list'], env, null));
      rows[3].bs.push(await measure(['-e', `const pg=require('pg');const c=new pg.Client({connectionString:${pgUrl}});c.connect().then(()=>c.query('SELECT 1')).then(()=>c.end())`], env, null));
    }
    console.log(`cold start, ${RUNS} runs each, interleaved with their baselines (medians)`);
    for (const r of rows) {
      const wall = median(r.xs.map((s) => s.wallMs)) / median(r.bs.map((s) => s.wallMs));
      const cpu = median(r.xs.map((s) => s.cpuMs)) / Math.max(10, median(r.bs.map((s) => s.cpuMs)));
      console.log(`${r.name.padEnd(27)} ${median(r.xs.map((s) => s.wallMs)).toFixed(0).padStart(5)} ms   baseline (${r.base}) ${median(r.bs.map((s) => s.wallMs)).toFixed(0).padStart(4)} ms   ratio ${wall.toFixed(2)}x (aim ${r.aim}x: ${wall <= r.aim ? 'met' : 'not met'})   cpu ratio ${cpu.toFixed(2)}x`);
    }
  } finally {
    await s3.stop();
    await db.drop();
  }
}

await main();
