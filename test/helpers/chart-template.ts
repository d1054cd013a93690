// The Go-template masker of the chart checks (test/chart.test.ts): a chart file becomes YAML the
// test can parse without helm: control lines dropped, `include` of the chart's own helpers
// expanded, other expressions replaced by placeholders whose text the checks can still read.
import assert from 'node:assert/strict';
// ---------------------------------------------------------------------------------------------
// Go-template masking

export const ACTION = /\{\{(-?)([\s\S]*?)(-?)\}\}/g;
export const COMMENT = /\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g;
export const PLACEHOLDER = /__TPL(\d+)__/g;

export type BlockKind = 'open' | 'else' | 'end' | 'other';
export function blockKind(inner: string): BlockKind {
  const word = inner.trim().split(/\s+/)[0];
  if (['if', 'range', 'with', 'define', 'block'].includes(word)) return 'open';
  if (word === 'else') return 'else';
  if (word === 'end') return 'end';
  return 'other';
}

export interface Include { name: string; mode: 'nindent' | 'indent' | 'none'; n: number }
export function parseInclude(inner: string): Include | undefined {
  const m = /^\s*include\s+"([^"]+)"\s+(\$|\.)\s*(?:\|\s*(nindent|indent)\s+(\d+))?\s*$/.exec(inner);
  if (!m) return undefined;
  return { name: m[1], mode: (m[3] as Include['mode']) ?? 'none', n: Number(m[4] ?? 0) };
}

/** Defined helpers (name -> body) and a block-balance check of one template file. */
export function scanBlocks(file: string, text: string): Map<string, string> {
  const defines = new Map<string, string>();
  const stack: { inner: string; bodyStart: number }[] = [];
  for (const m of text.replace(COMMENT, (c) => ' '.repeat(c.length)).matchAll(ACTION)) {
    const kind = blockKind(m[2]);
    if (kind === 'open') stack.push({ inner: m[2].trim(), bodyStart: m.index! + m[0].length });
    else if (kind === 'else') assert.ok(stack.length > 0, `${file}: {{ else }} outside a block`);
    else if (kind === 'end') {
      const open = stack.pop();
      assert.ok(open, `${file}: {{ end }} without an open block at offset ${m.index}`);
      const d = /^define\s+"([^"]+)"/.exec(open.inner);
      if (d) defines.set(d[1], text.slice(open.bodyStart, m.index).replace(/^[ \t]*\n/, '').replace(/\n[ \t]*$/, ''));
    }
  }
  assert.equal(stack.length, 0, `${file}: unclosed blocks: ${stack.map((s) => s.inner).join(', ')}`);
  return defines;
}

export class Masker {
  readonly exprs: string[] = [];
  constructor(readonly defines: Map<string, string>) {}

  /** The text of the template expression a placeholder stands for. */
  expr(v: unknown): string | undefined {
    if (typeof v !== 'string') return undefined;
    const m = /^__TPL(\d+)__$/.exec(v.trim());
    return m ? this.exprs[Number(m[1])] : undefined;
  }

  /** Every expression inside a string (placeholders within a longer scalar). */
  exprsIn(v: unknown): string[] {
    if (typeof v !== 'string') return [];
    return [...v.matchAll(PLACEHOLDER)].map((m) => this.exprs[Number(m[1])]);
  }

  private placeholders(line: string): string {
    return line.replace(ACTION, (_all, _l, inner: string) => `__TPL${this.exprs.push(inner.trim()) - 1}__`);
  }

  private expand(inc: Include, firstIndent: string, depth: number): string[] {
    const body = this.defines.get(inc.name);
    assert.ok(body !== undefined, `include of an undefined template "${inc.name}"`);
    const lines = this.mask(body, depth + 1).split('\n').filter((l) => l.trim() !== '');
    if (inc.mode === 'none') return lines.map((l, i) => (i === 0 ? firstIndent + l : l));
    const pad = ' '.repeat(inc.n);
    return lines.map((l) => pad + l);
  }

  /** Masked text: parses as YAML whenever the template is written one construct per line. */
  mask(text: string, depth = 0): string {
    assert.ok(depth < 10, 'include nesting too deep');
    const out: string[] = [];
    for (const line of text.replace(COMMENT, '').split('\n')) {
      const acts = [...line.matchAll(ACTION)];
      if (acts.length === 0) { out.push(line); continue; }
      if (line.replace(ACTION, '').trim() === '') {
        // a line of template actions only: control flow and unknown output are dropped,
        // the chart's own helpers are expanded where they are included
        const inc = acts.length === 1 ? parseInclude(acts[0][2]) : undefined;
        if (inc) out.push(...this.expand(inc, /^\s*/.exec(line)![0], depth));
        continue;
      }
      const last = acts[acts.length - 1];
      const atEnd = line.slice(last.index! + last[0].length).trim() === '';
      if (atEnd && /\|\s*nindent\s+\d+\s*$/.test(last[2].trim())) {
        // `key: {{- something | nindent N }}`: the key, then the block below it
        const head = line.slice(0, last.index!).replace(/\s+$/, '');
        out.push(this.placeholders(head));
        const inc = parseInclude(last[2]);
        if (inc) out.push(...this.expand(inc, '', depth));
        continue;
      }
      out.push(this.placeholders(line));
    }
    return out.join('\n');
  }
}

/** For each line of a template, the block actions (if/range/with) enclosing it. */
export function enclosing(text: string): string[][] {
  const stack: string[] = [];
  return text.split('\n').map((line) => {
    const here = [...stack];
    for (const m of line.matchAll(ACTION)) {
      const kind = blockKind(m[2]);
      if (kind === 'open') stack.push(m[2].trim());
      else if (kind === 'else') stack[stack.length - 1] = `${stack[stack.length - 1]} ELSE ${m[2].trim()}`;
      else if (kind === 'end') stack.pop();
    }
    return here;
  });
}
