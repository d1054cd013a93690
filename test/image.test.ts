// The container image (Dockerfile), checked on a machine without a container engine: the
// Dockerfile's stages are replayed outside a container: COPY steps copy (through .dockerignore),
// RUN steps of the dependency stages run as written, the runtime stage's system steps (chmod,
// ln -s) are applied to the replayed tree, and the result runs `svc -V`, `svc openapi`,
// `svc migrate` (the hook Job's command, with svc.toml rendered from the chart's values.yaml) and
// `svc serve` with the image's HEALTHCHECK command.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, lstatSync, readlinkSync, accessSync, constants as fsc } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile, chmod, symlink, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { stringify as toToml } from 'smol-toml';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { cleanEnv } from './helpers/cli.js';
import { freePort } from './helpers/net.js';
import { ROOT, PKG, chart, deployment, expr } from './helpers/chart.js';
import { DF, IGNORED, finalStage, instr, execForm, run, type Stage } from './helpers/dockerfile.js';

describe('Dockerfile, replayed outside a container', () => {
  test('multi-stage, slim Node 24 runtime (the release the tests run on), non-root, svc on PATH, HEALTHCHECK on /healthz, no secrets in the context', () => {
    assert.ok(DF.stages.length >= 2, 'multi-stage');
    const pinned = /^SVC_NODE_VERSION=(24\.\d+\.\d+)$/m.exec(readFileSync(path.join(ROOT, 'scripts/node.sh'), 'utf8'))?.[1];
    assert.ok(pinned, 'scripts/node.sh pins a Node 24 release');
    for (const s of DF.stages) assert.equal(s.from, `node:${pinned}-bookworm-slim`, `stage ${s.name}`);
    const user = instr(finalStage, 'USER');
    assert.equal(user.length, 1);
    assert.match(user[0].args, /^[1-9]\d{3,}:[1-9]\d{3,}$/, 'a numeric non-root uid:gid');
    assert.deepEqual(execForm(instr(finalStage, 'ENTRYPOINT')[0].args), ['svc']);
    assert.deepEqual(execForm(instr(finalStage, 'CMD')[0].args), ['serve']);
    const hc = instr(finalStage, 'HEALTHCHECK')[0];
    assert.ok(hc && hc.args.startsWith('CMD '));
    assert.match(hc.args, /\/healthz/);
    assert.match(hc.args, /SVC_SERVER__PORT\|\|8080/);
    assert.ok(instr(finalStage, 'EXPOSE')[0].args.split(/\s+/).includes(String(chart.values.config.server.port)));
    assert.ok(instr(finalStage, 'EXPOSE')[0].args.split(/\s+/).includes(chart.values.config.apps.listen.split(':').pop()));
    assert.ok(instr(finalStage, 'ENV').some((e) => e.args === 'NODE_ENV=production'));
    // RUN steps are plain shell; the only mount is npm's cache, which stays out of the layers
    for (const s of DF.stages) {
      for (const r of instr(s, 'RUN')) {
        assert.ok(!r.args.startsWith('['), `RUN at line ${r.line} is a shell command`);
        for (const [k, v] of Object.entries(r.flags)) assert.ok(k === 'mount' && v.startsWith('type=cache,'), `RUN flag --${k}=${v}`);
        assert.doesNotMatch(r.args, /npm install\b/, 'npm ci installs exactly the lock (scripts/setup.sh)');
      }
    }
    assert.ok(instr(DF.stages.find((s) => s.name === 'deps')!, 'RUN').some((r) => r.args === 'npm ci --omit=dev --ignore-scripts --no-audit --no-fund'));
    // the context: what the Dockerfile copies is in it; secrets and build output are not
    for (const s of DF.stages) {
      for (const c of instr(s, 'COPY').filter((c) => !c.flags.from)) {
        for (const src of c.args.split(/\s+/).slice(0, -1)) {
          assert.ok(existsSync(path.join(ROOT, src)), `COPY ${src}: exists`);
          assert.ok(!IGNORED(src), `COPY ${src}: not excluded by .dockerignore`);
        }
      }
    }
    // The build's own scripts: the bundler and every local module it imports are copied into the
    // build stage (the replay below maps that stage onto the checkout, where they all are).
    const build = DF.stages.find((s) => s.name === 'build')!;
    const copied = new Set(instr(build, 'COPY').flatMap((c) => c.args.split(/\s+/).slice(0, -1)));
    const closure = (f: string): string[] => [f, ...[...readFileSync(path.join(ROOT, f), 'utf8').matchAll(/^import [^;]* from '\.\/([^']+)';$/gm)]
      .flatMap((m) => closure(path.posix.join(path.posix.dirname(f), m[1]!)))];
    const scripts = closure('scripts/bundle.mjs');
    assert.ok(scripts.length > 1, 'the bundler imports modules of its own');
    for (const f of scripts) assert.ok(copied.has(f) && !IGNORED(f), `the build stage copies ${f}`);
    for (const p of ['svc.toml', 'src/svc.toml', '.env', 'node_modules', 'dist', '.git', 'test/cli.test.ts', 'charts/svc/values.yaml', 'npm-debug.log']) {
      assert.ok(IGNORED(p), `.dockerignore excludes ${p}`);
    }
    for (const p of ['src/cli/main.ts', 'bin/svc.js', 'migrations/0001_base.sql', 'package-lock.json', 'ui/index.html']) assert.ok(!IGNORED(p), `${p} is in the context`);
  });

  describe('replay', () => {
    let work: string;
    let db: TestDatabase;
    let s3: TestS3;
    const roots = new Map<string, string>();
    const replayed: string[] = [];

    before(async () => {
      work = await mkdtemp(path.join(tmpdir(), 'svc-image-'));
      [db, s3] = await Promise.all([createTestDatabase('svc_image'), startS3()]);
    });
    after(async () => {
      await Promise.all([db?.drop(), s3?.stop(), work && rm(work, { recursive: true, force: true })]);
    });

    /** A stage whose RUN steps are the very commands CI runs in the checkout (scripts/setup.sh)
     * is mapped onto the checkout instead of being run a second time. */
    function inCheckout(stage: Stage): boolean {
      if (process.env.SVC_IMAGE_REPLAY_ALL === '1' || stage === finalStage) return false;
      const setup = readFileSync(path.join(ROOT, 'scripts/setup.sh'), 'utf8').split('\n').map((l) => l.trim().replace(/^npm run --silent /, 'npm run '));
      const runs = instr(stage, 'RUN').map((r) => r.args.trim());
      return runs.length > 0 && runs.every((r) => setup.includes(r)) && existsSync(path.join(ROOT, 'dist/cli/main.js'));
    }

    test('replaying the stages yields a runtime tree without dev dependencies', { timeout: 240_000 }, async (t) => {
      const workdirs = new Map<string, string>();
      /** Where a path of a stage's filesystem is on this machine. */
      const hostPath = (stage: string, abs: string) => {
        const root = roots.get(stage)!;
        return root === ROOT ? path.join(ROOT, path.relative(workdirs.get(stage)!, abs)) : path.join(root, abs);
      };
      const stageRuns: Promise<void>[] = [];
      const done = new Map<string, Promise<void>>();
      for (const stage of DF.stages) {
        const checkout = inCheckout(stage);
        roots.set(stage.name, checkout ? ROOT : path.join(work, stage.name));
        const deps = instr(stage, 'COPY').map((c) => c.flags.from).filter(Boolean);
        const p = (async () => {
          await Promise.all(deps.map((d) => done.get(d)));
          let wd = '/';
          const env: Record<string, string> = {};
          for (const i of stage.instrs) {
            if (i.op === 'WORKDIR') {
              wd = path.posix.resolve(wd, i.args);
              workdirs.set(stage.name, wd);
              if (!checkout) await mkdir(hostPath(stage.name, wd), { recursive: true });
            } else if (i.op === 'ENV') {
              const [k, ...v] = i.args.split('=');
              env[k] = v.join('=');
            } else if (i.op === 'COPY') {
              const parts = i.args.split(/\s+/);
              const rawDest = parts.pop()!;
              const dest = path.posix.resolve(wd, rawDest);
              const intoDir = rawDest.endsWith('/') || parts.length > 1;
              for (const src of parts) {
                const from = i.flags.from ? hostPath(i.flags.from, path.posix.resolve('/', src)) : path.join(ROOT, src);
                // a directory's contents go to dest; a file goes into dest/ or becomes dest
                const finalTarget = !statSync(from).isDirectory() && intoDir
                  ? path.join(hostPath(stage.name, dest), path.basename(src))
                  : hostPath(stage.name, dest);
                if (checkout) {
                  assert.equal(finalTarget, path.join(ROOT, src), `stage ${stage.name}: COPY ${src} maps onto the checkout`);
                  continue;
                }
                await mkdir(path.dirname(finalTarget), { recursive: true });
                if (i.flags.from) {
                  // between stages: the same tree, hard-linked (a copy of node_modules is slow)
                  const r = await run('cp', ['-al', from, finalTarget], { cwd: work, env: cleanEnv() });
                  assert.equal(r.code, 0, r.stderr);
                } else {
                  await cp(from, finalTarget, {
                    recursive: true,
                    verbatimSymlinks: true,
                    filter: (s) => !IGNORED(path.relative(ROOT, s) || '.'),
                  });
                }
              }
            } else if (i.op === 'RUN') {
              if (checkout) continue; // CI ran these very commands in the checkout (scripts/setup.sh)
              if (stage === finalStage) { await emulateSystemSteps(stage.name, i.args, hostPath); continue; }
              const t0 = Date.now();
              const r = await run('sh', ['-c', i.args], {
                cwd: hostPath(stage.name, wd),
                env: cleanEnv({ ...env, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' }),
                timeoutMs: 200_000,
              });
              assert.equal(r.code, 0, `stage ${stage.name}: RUN ${i.args}\n${r.stderr}`);
              replayed.push(`${stage.name}: ${i.args} (${Math.round((Date.now() - t0) / 1000)} s)`);
            }
          }
        })();
        done.set(stage.name, p);
        stageRuns.push(p);
      }
      await Promise.all(stageRuns);
      const app = path.join(roots.get(finalStage.name)!, workdirs.get(finalStage.name)!);
      assert.deepEqual(readdirSync(app).sort(), ['bin', 'dist', 'migrations', 'node_modules', 'package-lock.json', 'package.json', 'ui']);
      // nothing the lock marks dev-only (the devDependencies and what only they need)
      const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
      const devOnly = Object.entries(lock.packages).filter(([p, v]) => p.startsWith('node_modules/') && v.dev).map(([p]) => p);
      assert.ok(devOnly.length > 0);
      for (const p of devOnly) assert.ok(!existsSync(path.join(app, p)), `dev-only ${p} is not in the image`);
      for (const dev of Object.keys(PKG.devDependencies)) {
        if (!lock.packages[`node_modules/${dev}`]?.dev) continue; // also needed at run time by a dependency
        assert.ok(!existsSync(path.join(app, 'node_modules', dev)), `dev dependency ${dev} is not in the image`);
      }
      for (const dep of Object.keys(PKG.dependencies)) {
        assert.ok(existsSync(path.join(app, 'node_modules', dep, 'package.json')), `dependency ${dep} is in the image`);
      }
      assert.ok(existsSync(path.join(app, 'dist/cli/main.js')));
      assert.ok(replayed.some((r) => r.includes('npm ci --omit=dev')), replayed.join('\n'));
      t.diagnostic(`replayed: ${replayed.join('; ')}`);
    });

    async function emulateSystemSteps(stage: string, cmd: string, hostPath: (s: string, abs: string) => string) {
      const sh = await run('sh', ['-n', '-c', cmd], { cwd: work, env: cleanEnv() });
      assert.equal(sh.code, 0, `RUN ${cmd} is valid shell`);
      for (const step of cmd.split('&&').map((s) => s.trim())) {
        const w = step.split(/\s+/);
        if (w[0] === 'chmod' && w.length === 3) {
          await chmod(hostPath(stage, w[2]), parseInt(w[1], 8));
        } else if (w[0] === 'ln' && w[1] === '-s' && w.length === 4) {
          assert.ok(existsSync(hostPath(stage, w[2])), `ln -s target ${w[2]} exists`);
          await mkdir(path.dirname(hostPath(stage, w[3])), { recursive: true });
          await symlink(hostPath(stage, w[2]), hostPath(stage, w[3]));
        } else if (w[0] === 'groupadd' || w[0] === 'useradd') {
          // the image's user database: checked against USER instead of replayed
          const uid = /--(?:uid|gid)\s+(\d+)/.exec(step)?.[1];
          const [u, g] = instr(finalStage, 'USER')[0].args.split(':');
          assert.ok(uid === (w[0] === 'useradd' ? u : g), `${w[0]} creates the id USER names`);
        } else {
          assert.fail(`runtime stage step cannot be replayed outside a container: ${step}`);
        }
      }
    }

    /** The image's environment: `svc` resolved through PATH in the replayed root. */
    function image() {
      const root = roots.get(finalStage.name)!;
      const link = path.join(root, 'usr/local/bin', execForm(instr(finalStage, 'ENTRYPOINT')[0].args)[0]);
      assert.ok(lstatSync(link).isSymbolicLink(), 'svc on PATH is a link');
      accessSync(readlinkSync(link), fsc.X_OK);
      const imageEnv = Object.fromEntries(instr(finalStage, 'ENV').map((e) => e.args.split('=')));
      return { root, link, imageEnv };
    }

    /** The variables the chart gives the API pods, with values from a stand-in secret store. */
    function chartEnv(store: Record<string, string>): Record<string, string> {
      const out: Record<string, string> = {};
      for (const e of deployment('api').doc.spec.template.spec.containers[0].env) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) {
          if (e.name in store) out[e.name] = store[e.name];
          else assert.ok(ref.optional === true || expr(ref.optional), `a value for the required ${e.name}`);
        } else if (typeof e.value === 'string' && !expr(e.value)) {
          out[e.name] = e.value;
        }
      }
      return out;
    }

    test('the runtime tree runs svc -V, openapi, migrate (hook command) and serve; HEALTHCHECK passes', { timeout: 120_000 }, async () => {
      const { root, link, imageEnv } = image();
      const wd = path.join(root, 'etc/svc'); // the chart's workingDir, holding svc.toml
      await mkdir(wd, { recursive: true });
      await writeFile(path.join(wd, 'svc.toml'), toToml(chart.values.config));
      const store = {
        SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64'),
        SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
        SVC_DATABASE__URL: db.url,
        SVC_STORAGE__ACCESS_KEY: s3.accessKey,
        SVC_STORAGE__SECRET_KEY: s3.secretKey,
        SVC_REDIS__URL: 'redis://127.0.0.1:6379',
      };
      const port = await freePort();
      const env = cleanEnv({
        ...imageEnv,
        ...chartEnv(store),
        // this machine's stand-ins for the cluster's object store and listener
        SVC_STORAGE__ENDPOINT: s3.endpoint,
        SVC_STORAGE__PATH_STYLE: 'true',
        SVC_SERVER__HOST: '127.0.0.1',
        SVC_SERVER__PORT: String(port),
        PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      });
      const svc = (args: string[], timeoutMs = 30_000) => run(link, args, { cwd: wd, env, timeoutMs });

      const v = await svc(['-V']);
      assert.equal(v.code, 0, v.stderr);
      assert.equal(v.stdout.trim(), PKG.version);
      const o = await svc(['openapi']);
      assert.equal(o.code, 0, o.stderr);
      assert.match(JSON.parse(o.stdout).openapi, /^3\.1\./);
      const m = await svc(['migrate']);
      assert.equal(m.code, 0, `svc migrate from the replayed image:\n${m.stderr}`);
      assert.match(m.stdout, /applied: 0001_base/);

      const hc = execForm(instr(finalStage, 'HEALTHCHECK')[0].args.replace(/^CMD\s+/, ''));
      const healthcheck = () => run(hc[0], hc.slice(1), { cwd: wd, env, timeoutMs: 10_000 });
      assert.equal((await healthcheck()).code, 1, 'HEALTHCHECK fails while nothing listens');

      const child = spawn(link, execForm(instr(finalStage, 'CMD')[0].args), { cwd: wd, env });
      let out = '';
      child.stdout.on('data', (d) => { out += d; });
      child.stderr.on('data', (d) => { out += d; });
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      try {
        let ok = false;
        for (let i = 0; i < 100 && !ok && child.exitCode === null; i++) {
          ok = (await healthcheck()).code === 0;
          if (!ok) await new Promise((r) => setTimeout(r, 200));
        }
        assert.ok(ok, `HEALTHCHECK passes once svc serve listens:\n${out}`);
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        assert.equal(ready.status, 200);
        // the browser UI's files are in the image (ui/, read relative to dist/)
        const page = await fetch(`http://127.0.0.1:${port}/`);
        assert.equal(page.status, 200, 'GET / serves the UI from the image');
        assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      } finally {
        child.kill('SIGTERM');
      }
      assert.equal(await exited, 0, `svc serve stops cleanly on SIGTERM:\n${out}`);
    });
  });
});
