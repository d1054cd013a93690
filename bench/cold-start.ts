// Issue 2 figures: cold start of `svc serve` to listening (on a migrated database) and
// `svc openapi`, each beside a baseline measured in the same run on the same machine:
//   serve   vs a bare Node http server starting to listen
//   openapi vs a bare Node process printing "{}"
import { spawn } from 'node:child_process';
import { createTestDatabase } from '../test/helpers/db.js';
import { startS3 } from '../test/helpers/s3.js';
import { serviceEnv, SVC_BIN, runSvc } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/net.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);

function timeUntil(args: string[], env: Record<string, string>, ready: RegExp | null): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { env });
    let out = '';
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      resolve(Number(process.hrtime.bigint() - t0) / 1e6);
      if (ready) child.kill('SIGTERM');
    };
    const onData = (d: Buffer) => { out += d; if (ready && ready.test(out)) finish(); };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      if (!ready && code === 0) return finish();
      if (!done) reject(new Error(`exited ${code}: ${out}`));
    });
  });
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function main() {
  const db = await createTestDatabase('svc_bench');
  const s3 = await startS3();
  const env = serviceEnv(db.url, s3, { SVC_SERVER__HOST: '127.0.0.1', SVC_LOG__JSON: 'true' });
  try {
    const m = await runSvc(['migrate'], { env });
    if (m.code !== 0) throw new Error(m.stderr);
    const serve: number[] = []; const bare: number[] = []; const openapi: number[] = []; const noop: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const port = await freePort();
      serve.push(await timeUntil([SVC_BIN, 'serve'], { ...env, SVC_SERVER__PORT: String(port) }, /"msg":"listening"/));
      const port2 = await freePort();
      bare.push(await timeUntil(['-e', `require('http').createServer((q,s)=>s.end()).listen(${port2},'127.0.0.1',()=>console.log('listening'))`], env, /listening/));
      openapi.push(await timeUntil([SVC_BIN, 'openapi'], env, null));
      noop.push(await timeUntil(['-e', 'process.stdout.write("{}")'], env, null));
    }
    const row = (name: string, xs: number[], base: number[], baseName: string) =>
      console.log(`${name.padEnd(28)} median ${median(xs).toFixed(0).padStart(5)} ms   baseline (${baseName}) ${median(base).toFixed(0).padStart(4)} ms   ratio ${(median(xs) / median(base)).toFixed(2)}x`);
    console.log(`cold start, ${RUNS} runs each, interleaved`);
    row('svc serve -> listening', serve, bare, 'bare node http listen');
    row('svc openapi', openapi, noop, 'bare node process');
  } finally {
    await s3.stop();
    await db.drop();
  }
}

await main();
