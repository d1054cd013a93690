// The SQL console's editor: CodeMirror 6 with SQL highlighting and keyword completion (the
// PostgreSQL dialect, closest to DuckDB's and Trino's), mounted in a shadow root like the flow
// editor (see mount.ts). Ctrl/Cmd-Enter runs the statement; Tab leaves the editor, so the
// keyboard is never trapped.
import { useEffect, useRef } from 'preact/hooks';
import { EditorState } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { autocompletion } from '@codemirror/autocomplete';
import { PostgreSQL, sql } from '@codemirror/lang-sql';
import { editorTheme, mountInShadow } from './mount';

export interface SqlEditorProps {
  id: string;
  value: string;
  label: string;
  onChange(text: string): void;
  /** Ctrl/Cmd-Enter. */
  onRun?(): void;
}

export function SqlEditor(props: SqlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(props);
  latest.current = props;

  useEffect(() => {
    const run = () => { latest.current.onRun?.(); return true; };
    const m = mountInShadow(host.current!, EditorState.create({
      doc: props.value,
      extensions: [
        lineNumbers(), highlightActiveLine(), drawSelection(), history(), bracketMatching(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }), sql({ dialect: PostgreSQL, upperCaseKeywords: true }),
        autocompletion(), editorTheme,
        keymap.of([{ key: 'Mod-Enter', run }, ...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({ 'aria-label': props.label, id: props.id }),
        EditorView.updateListener.of((u) => { if (u.docChanged) latest.current.onChange(u.state.doc.toString()); }),
      ],
    }));
    view.current = m.view;
    return () => { m.destroy(); view.current = null; };
  }, []);

  // A statement picked from the history replaces the text; typing does not come back here.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== props.value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: props.value } });
  }, [props.value]);

  return <div ref={host} class="yaml-editor" data-editor={props.id} />;
}
