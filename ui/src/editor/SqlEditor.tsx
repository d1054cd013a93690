// The SQL editor (the SQL console, the Data API's endpoints): CodeMirror 6 with SQL highlighting
// and completion of keywords and of the names the caller knows (the catalog's tables and their
// columns), the PostgreSQL dialect (closest to DuckDB's and Trino's), mounted in a shadow root
// like the flow editor (see mount.ts). Ctrl/Cmd-Enter runs the statement: the text handed to
// onRun is the view's own, never a render's copy, which can be a frame behind (ownText.ts).
// Tab leaves the editor, so the keyboard is never trapped.
import { useEffect, useRef } from 'preact/hooks';
import { Compartment, EditorState } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, syntaxHighlighting } from '@codemirror/language';
import { autocompletion } from '@codemirror/autocomplete';
import { PostgreSQL, sql, type SQLNamespace } from '@codemirror/lang-sql';
import { editorTheme, focusable, highlight, mountInShadow } from './mount';
import { useOwnedText } from './ownText';

/** What a screen may do with the editor from outside: insert at the cursor (the workbench's tree). */
export interface SqlEditorHandle { insert(text: string): void; text(): string }

export interface SqlEditorProps {
  id: string;
  value: string;
  label: string;
  onChange(text: string): void;
  /** Ctrl/Cmd-Enter, with the editor's text at that moment. */
  onRun?(text: string): void;
  /** Names completed beside the keywords: `{ "iceberg.sales.orders": ["id", ...] }`. */
  names?: SQLNamespace;
  handle?(h: SqlEditorHandle | null): void;
  rows?: 'small' | 'large';
}

export function SqlEditor(props: SqlEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const onChange = useRef<((t: string) => void) | undefined>(props.onChange);
  onChange.current = props.onChange;
  const reporter = useOwnedText(view, props.value, onChange);
  const language = useRef(new Compartment());

  useEffect(() => {
    const run = (v: EditorView) => { latest.current.onRun?.(v.state.doc.toString()); return true; };
    const m = mountInShadow(host.current!, EditorState.create({
      doc: props.value,
      extensions: [
        lineNumbers(), highlightActiveLine(), drawSelection(), history(), bracketMatching(),
        syntaxHighlighting(highlight), language.current.of(sql({ dialect: PostgreSQL, upperCaseKeywords: true, schema: props.names })),
        autocompletion(), editorTheme, focusable,
        keymap.of([{ key: 'Mod-Enter', run, preventDefault: true }, ...defaultKeymap, ...historyKeymap]),
        EditorView.contentAttributes.of({ 'aria-label': props.label, id: props.id }),
        reporter,
      ],
    }));
    view.current = m.view;
    const v = m.view;
    latest.current.handle?.({
      insert(text) {
        const { from, to } = v.state.selection.main;
        v.dispatch({ changes: { from, to, insert: text }, selection: { anchor: from + text.length }, scrollIntoView: true });
        v.focus();
      },
      text: () => v.state.doc.toString(),
    });
    return () => { latest.current.handle?.(null); m.destroy(); view.current = null; };
  }, []);

  // Names arrive after the editor (the catalog is read on demand): the completion follows them.
  useEffect(() => {
    view.current?.dispatch({ effects: language.current.reconfigure(sql({ dialect: PostgreSQL, upperCaseKeywords: true, schema: props.names })) });
  }, [props.names]);

  return <div ref={host} class={`yaml-editor${props.rows === 'small' ? ' editor-small' : ''}`} data-editor={props.id} />;
}
