// Where a validation problem's path (`tasks[1].message`, `triggers[0].cron`) is in the YAML
// source: the key's line when it exists, else the nearest enclosing node that does (a missing
// `message` marks the task's first line). Syntax errors carry their own line and column.
import { isMap, isScalar, isSeq, parseDocument, type Node as YamlNode } from 'yaml';

export interface Located { from: number; to: number; line: number }

export function parsePath(path: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function lineEnd(text: string, offset: number): number {
  const nl = text.indexOf('\n', offset);
  return nl < 0 ? text.length : nl;
}

function span(text: string, from: number): Located {
  const start = Math.max(0, Math.min(from, text.length));
  return { from: start, to: Math.max(start, lineEnd(text, start)), line: lineOf(text, start) };
}

/** Locates a problem in the source; null when the source cannot be parsed to a tree. */
export function locate(text: string, path: string, message: string): Located {
  const syntax = /\(line (\d+), column (\d+)\)/.exec(message);
  if (!path && syntax) {
    const lines = text.split('\n');
    const line = Math.min(Number(syntax[1]), lines.length);
    let from = 0;
    for (let i = 0; i < line - 1; i++) from += lines[i].length + 1;
    return span(text, from + Math.max(0, Number(syntax[2]) - 1));
  }
  let doc;
  try { doc = parseDocument(text, { keepSourceTokens: false }); } catch { return span(text, 0); }
  let node = doc.contents as YamlNode | null;
  let at = node?.range?.[0] ?? 0;
  for (const key of parsePath(path)) {
    if (typeof key === 'number' && isSeq(node)) {
      const item = node.items[key] as YamlNode | undefined;
      if (!item) break;
      node = item;
      at = item.range?.[0] ?? at;
    } else if (typeof key === 'string' && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
      if (!pair) break;
      at = (pair.key as YamlNode).range?.[0] ?? at;
      node = pair.value as YamlNode | null;
    } else {
      break;
    }
  }
  return span(text, at);
}
