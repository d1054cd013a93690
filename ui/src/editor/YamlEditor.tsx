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
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { yaml } from '@codemirror/lang-yaml';
import { linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { autocompletion } from '@codemirror/autocomplete';
import { unifiedMergeView } from '@codemirror/merge';
import { locate } from './yamlPaths';
import { schemaCompletion, type Schema } from './schemaComplete';
import { editorTheme as theme, mountInShadow } from './mount';

/** How many reported texts are remembered as possible echoes (a parent that never passes them back). */
const MAX_ECHOES = 100;

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
  /** `text` for sources that are not YAML (an app's notebook source): no YAML highlighting. */
  language?: 'yaml' | 'text';
}

export function YamlEditor(props: YamlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(props);
  latest.current = props;
  /** The texts the view reported through onChange that the parent has not passed back yet. */
  const emitted = useRef<string[]>([]);

  useEffect(() => {
    const exts: Extension[] = [
      lineNumbers(), highlightActiveLineGutter(), highlightActiveLine(), drawSelection(), history(), indentOnInput(), bracketMatching(),
      syntaxHighlighting(defaultHighlightStyle, { fallback: true }), props.language === 'text' ? [] : yaml(), theme,
      keymap.of([...defaultKeymap, ...historyKeymap]),
      // (an aria-describedby could not reach the problems list outside the shadow root: that list
      // is a live region of its own)
      EditorView.contentAttributes.of({ 'aria-label': props.label, id: props.id }),
      EditorView.updateListener.of((u) => {
        if (!u.docChanged) return;
        const text = u.state.doc.toString();
        emitted.current.push(text);
        if (emitted.current.length > MAX_ECHOES) emitted.current.shift();
        latest.current.onChange?.(text);
      }),
    ];
    if (props.readOnly) exts.push(EditorState.readOnly.of(true), EditorView.editable.of(false));
    if (props.schema && !props.readOnly) exts.push(autocompletion({ override: [schemaCompletion(() => latest.current.schema!())] }));
    if (props.original !== undefined) exts.push(unifiedMergeView({ original: props.original, mergeControls: false, gutter: true }));
    if (props.validate) {
      exts.push(lintGutter(), linter(async (v) => {
        const text = v.state.doc.toString();
        const found = await latest.current.validate!(text);
        // The answer is for this text; a newer edit runs the linter again.
        if (v.state.doc.toString() !== text) return [];
        const problems: Problem[] = [];
        const diagnostics: Diagnostic[] = found.map((p) => {
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
    return () => { m.destroy(); view.current = null; };
  }, [props.readOnly, props.original]);

  // The editor owns its text. A parent that keeps it (onChange -> state -> value) passes back what
  // the view itself wrote, often late: Preact runs a render's pending effects at the start of the
  // next render, so while keys arrive faster than renders, this effect sees an older text than the
  // view's. Pushing that back replaced the whole document under the cursor (and the open option
  // list), which reported a change, which rendered again: keys were lost and the page stalled. So
  // a value the view wrote is an echo and ignored (the echoes come in the order written, so those
  // before it go too); only another value (a loaded revision) replaces the text.
  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const echo = emitted.current.indexOf(props.value);
    if (echo >= 0) { emitted.current.splice(0, echo + 1); return; }
    emitted.current = [];
    if (v.state.doc.toString() !== props.value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: props.value } });
  }, [props.value]);

  return <div ref={host} class="yaml-editor" data-editor={props.id} />;
}
