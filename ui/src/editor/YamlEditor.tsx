// The flow editor: CodeMirror 6 with YAML highlighting, line numbers, undo history, search-free
// minimal setup, completion of keys and values from the flow model's JSON Schema (schemaComplete.ts),
// and the server's own validation (`POST .../flows/validate`) run as the user types
// (after a pause), its problems underlined on their lines and listed below the editor for screen
// readers. Tab is left to move focus (no Tab indentation), so the editor never traps the keyboard.
// CodeMirror injects its styles at run time: into a <style> element in a document, which the CSP
// (`style-src 'self'`) refuses, but as constructed stylesheets in a shadow root, which the CSP
// does not govern. So the editor lives in an open shadow root of its host element; the page's
// theme reaches it through inherited CSS custom properties.
import { useEffect, useRef } from 'preact/hooks';
import { EditorState, type Extension } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { yaml } from '@codemirror/lang-yaml';
import { PostgreSQL, sql } from '@codemirror/lang-sql';
import { linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { autocompletion } from '@codemirror/autocomplete';
import { unifiedMergeView } from '@codemirror/merge';
import { locate } from './yamlPaths';
import { schemaCompletion, type Schema } from './schemaComplete';
import { editorTheme as theme, focusable, highlight, mountInShadow } from './mount';
import { useOwnedText } from './ownText';
import { suggestKey, unknownKeys } from './didYouMean';

export interface Problem { path: string; message: string; line: number }

export interface YamlEditorProps {
  id: string;
  value: string;
  label: string;
  readOnly?: boolean;
  /** Validates the text; problems are shown on their lines. */
  validate?(text: string): Promise<Array<{ path: string; message: string }>>;
  onProblems?(problems: Problem[]): void;
  onChange?(text: string): void;
  /** The document's JSON Schema (asked for on the first completion): keys and values are completed from it. */
  schema?(): Promise<Schema>;
  /** Shows the changes from this text (a revision diff), read-only. */
  original?: string;
  /** The source's language: YAML (flows; JSON reads as YAML), SQL, or plain text (an app's notebook source). */
  language?: 'yaml' | 'text' | 'sql';
  /** Ctrl/Cmd-S, with the editor's text at that moment. */
  onSave?(text: string): void;
  /** The cursor moved (or the text changed): its offset in the text. */
  onCursor?(pos: number): void;
  /** What a screen may do with the editor from outside: move to a problem's line. */
  handle?(h: YamlEditorHandle | null): void;
}

export interface YamlEditorHandle { goto(line: number): void }

/**
 * A misspelt key is reported on its mapping (`tasks[0]`, `Unrecognized key: "mesage"`): the
 * problem moves onto the key itself and names the nearest key the mapping may take.
 */
function placeUnknownKeys(found: Array<{ path: string; message: string }>, text: string, root: Schema | null): Array<{ path: string; message: string }> {
  return found.flatMap((p) => {
    const keys = unknownKeys(p.message);
    if (keys.length === 0) return [p];
    return keys.map((key) => {
      const path = p.path ? `${p.path}.${key}` : key;
      const guess = root ? suggestKey(root, text, locate(text, path, '').from, key) : null;
      return { path, message: guess ? `unknown key "${key}": did you mean "${guess}"?` : `unknown key "${key}"` };
    });
  });
}

export function YamlEditor(props: YamlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  // The view owns its text; `value` replaces it only when it is not an echo (ownText.ts).
  const reporter = useOwnedText(view, props.value, onChange);
  // The schema, asked once and shared by completion and the linter's "did you mean".
  const schemaOnce = useRef<Promise<Schema | null> | null>(null);
  const loadSchema = () => (schemaOnce.current ??= latest.current.schema!().catch((err: unknown) => { schemaOnce.current = null; console.warn('flow schema not loaded', err); return null; }));

  useEffect(() => {
    const exts: Extension[] = [
      lineNumbers(), highlightActiveLineGutter(), highlightActiveLine(), drawSelection(), history(), indentOnInput(), bracketMatching(),
      syntaxHighlighting(highlight), props.language === 'text' ? [] : props.language === 'sql' ? sql({ dialect: PostgreSQL }) : yaml(), theme, focusable,
      keymap.of([{ key: 'Mod-s', preventDefault: true, run: (v) => { latest.current.onSave?.(v.state.doc.toString()); return true; } }, ...defaultKeymap, ...historyKeymap]),
      EditorView.updateListener.of((u) => { if (u.selectionSet || u.docChanged) latest.current.onCursor?.(u.state.selection.main.head); }),
      // (an aria-describedby could not reach the problems list outside the shadow root: that list
      // is a live region of its own)
      EditorView.contentAttributes.of({ 'aria-label': props.label, id: props.id }),
      reporter,
    ];
    if (props.readOnly) exts.push(EditorState.readOnly.of(true), EditorView.editable.of(false));
    if (props.schema && !props.readOnly) exts.push(autocompletion({ override: [schemaCompletion(async () => { const sc = await loadSchema(); if (!sc) throw new Error('no schema'); return sc; })] }));
    if (props.original !== undefined) exts.push(unifiedMergeView({ original: props.original, mergeControls: false, gutter: true }));
    if (props.validate) {
      exts.push(lintGutter(), linter(async (v) => {
        const text = v.state.doc.toString();
        const found = await latest.current.validate!(text);
        // The answer is for this text; a newer edit runs the linter again.
        if (v.state.doc.toString() !== text) return [];
        const root = props.schema ? await loadSchema() : null;
        const problems: Problem[] = [];
        const diagnostics: Diagnostic[] = placeUnknownKeys(found, text, root).map((p) => {
          const at = locate(text, p.path, p.message);
          problems.push({ ...p, line: at.line });
          return { from: at.from, to: at.to, severity: 'error', message: p.path ? `${p.path}: ${p.message}` : p.message, source: 'flows/validate' };
        });
        latest.current.onProblems?.(problems.sort((a, b) => a.line - b.line));
        return diagnostics;
      }, { delay: 400 }));
    }
    const m = mountInShadow(host.current!, EditorState.create({ doc: props.value, extensions: exts }));
    view.current = m.view;
    const v = m.view;
    latest.current.handle?.({
      goto(line) {
        const l = v.state.doc.line(Math.max(1, Math.min(line, v.state.doc.lines)));
        v.dispatch({ selection: { anchor: l.from + (/^\s*(- +)?/.exec(l.text)?.[0].length ?? 0) }, scrollIntoView: true });
        v.focus();
      },
    });
    return () => { latest.current.handle?.(null); m.destroy(); view.current = null; };
  }, [props.readOnly, props.original, props.language]);

  return <div ref={host} class="yaml-editor" data-editor={props.id} />;
}
