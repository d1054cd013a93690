// The Dockerfile as data for the image checks (test/image.test.ts): instructions by stage,
// .dockerignore as a predicate, and a child-process runner for replaying RUN steps and the
// runtime commands.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './chart.js';

export interface Instr { op: string; flags: Record<string, string>; args: string; line: number }
export interface Stage { name: string; from: string; instrs: Instr[] }

export function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const logical: { text: string; line: number }[] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const l = raw.trimEnd();
    if (buf === '' && (l.trim() === '' || l.trimStart().startsWith('#'))) return;
    if (buf === '') start = i + 1;
    if (l.endsWith('\\')) { buf += `${l.slice(0, -1)} `; return; }
    logical.push({ text: (buf + l).trim(), line: start });
    buf = '';
  });
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  const subst = (s: string) => s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_a, x, y) => args[x ?? y] ?? '');
  for (const { text: t, line } of logical) {
    const m = /^(\w+)\s+([\s\S]*)$/.exec(t);
    assert.ok(m, `Dockerfile line ${line}: ${t}`);
    const op = m[1].toUpperCase();
    let rest = m[2];
    const flags: Record<string, string> = {};
    if (['COPY', 'RUN', 'HEALTHCHECK'].includes(op)) {
      let f: RegExpExecArray | null;
      while ((f = /^--([\w-]+)=(\S+)\s+/.exec(rest))) { flags[f[1]] = f[2]; rest = rest.slice(f[0].length); }
    }
    if (op === 'ARG' && stages.length === 0) {
      const [k, v = ''] = rest.split('=');
      args[k.trim()] = v.trim();
      continue;
    }
    if (op === 'FROM') {
      const fm = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      assert.ok(fm, `FROM ${rest}`);
      stages.push({ name: fm[2] ?? String(stages.length), from: subst(fm[1]), instrs: [] });
      continue;
    }
    assert.ok(stages.length > 0, `Dockerfile line ${line}: ${op} before FROM`);
    stages[stages.length - 1].instrs.push({ op, flags, args: rest, line });
  }
  return { args, stages };
}

/** .dockerignore with Docker's semantics: last matching pattern wins, a match on a parent
 * directory applies to everything under it, `!` re-includes. */
export function dockerignore(text: string): (rel: string) => boolean {
  const rules = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const neg = l.startsWith('!');
    const pat = (neg ? l.slice(1) : l).replace(/^\/+|\/+$/g, '');
    let re = '';
    for (let i = 0; i < pat.length; i++) {
      const ch = pat[i];
      if (ch === '*' && pat[i + 1] === '*') { re += '.*'; i++; if (pat[i + 1] === '/') { re = re.slice(0, -2) + '(?:.*/)?'; i++; } }
      else if (ch === '*') re += '[^/]*';
      else if (ch === '?') re += '[^/]';
      else re += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    return { neg, re: new RegExp(`^${re}$`) };
  });
  return (rel: string) => {
    const parts = rel.split('/');
    const candidates = parts.map((_p, i) => parts.slice(0, i + 1).join('/'));
    let ignored = false;
    for (const r of rules) if (candidates.some((c) => r.re.test(c))) ignored = !r.neg;
    return ignored;
  };
}

export function run(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string>; timeoutMs?: number; input?: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${cmd} ${args.join(' ')} timed out\n${stderr}`)); }, opts.timeoutMs ?? 30_000);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

export const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
export const DF = parseDockerfile(DOCKERFILE);
export const IGNORED = dockerignore(readFileSync(path.join(ROOT, '.dockerignore'), 'utf8'));
export const finalStage = DF.stages[DF.stages.length - 1];
export const instr = (stage: Stage, op: string) => stage.instrs.filter((i) => i.op === op);
export const execForm = (s: string): string[] => { const v = JSON.parse(s); assert.ok(Array.isArray(v)); return v; };
