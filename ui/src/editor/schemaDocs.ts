// The docs of the task (or trigger, or input) under the cursor, from the same JSON Schema as
// completion: the mapping around the cursor is found from indentation (schemaComplete.ts), its
// `type:` picks the alternative, and its keys are listed with their types, whether required, and
// their descriptions.
import { cursorContext, resolve, schemasAt, typeText, valuesOf, type Schema } from './schemaComplete';

export interface KeyDoc { key: string; type: string; required: boolean; description?: string }
export interface TypeDoc { type: string; description?: string; keys: KeyDoc[] }

/** The documented type of the mapping that holds the line at `pos`, or null (no `type:`, or not in the schema). */
export function docAt(root: Schema, text: string, pos: number): TypeDoc | null {
  const lineStart = text.lastIndexOf('\n', Math.max(0, pos - 1)) + 1;
  const lineEnd = text.indexOf('\n', pos);
  const line = text.slice(lineStart, lineEnd < 0 ? undefined : lineEnd);
  const indent = /^( *(?:- +)?)/.exec(line)![1];
  const ctx = cursorContext(text.slice(0, lineStart) + indent, text.slice(lineStart + indent.length));
  if (!ctx) return null;
  const keys = new Map(ctx.path[ctx.path.length - 1].keys);
  // The cursor's own line is not among the frame's keys: read its key too.
  const own = /^([\w.-]+) *:(?: +(.*))?$/.exec(line.slice(indent.length));
  if (own) keys.set(own[1], (own[2] ?? '').trim().replace(/^["'](.*)["']$/, '$1'));
  const type = keys.get('type');
  if (!type) return null;
  const path = [...ctx.path.slice(0, -1), { ...ctx.path[ctx.path.length - 1], keys }];
  const alts = schemasAt(root, path);
  if (alts.length !== 1) return null;
  const a = alts[0];
  const declared = a.properties?.type ? valuesOf(root, a.properties.type) : [];
  return {
    type: declared.length === 1 ? declared[0] : type,
    description: resolve(root, a).description,
    keys: Object.entries(a.properties ?? {}).map(([key, s]) => {
      const r = resolve(root, s);
      return { key, type: typeText(root, r), required: a.required?.includes(key) ?? false, description: r.description };
    }),
  };
}
