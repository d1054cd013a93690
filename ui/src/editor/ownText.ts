// The editors own their text (docs/ui.md, "The editor owns its text"): the view reports each
// change with onChange, and a parent that keeps it passes it back as `value`, often late. Preact
// runs a render's pending effects at the start of the next render, so while keys (or a paste and
// Ctrl+Enter) come faster than renders, the value effect sees an older text than the view's.
// Pushing that back replaced the whole document under the cursor with an older text, which
// reported a change, which rendered again: keys were lost and the page stalled (the flow editor
// with its option list open; the SQL console after select-all, paste and Ctrl+Enter in one frame).
// So a value the view wrote is an echo and ignored (echoes come in the order written, so those
// before it go too); only another value (a loaded revision, a history entry) replaces the text.
import { useEffect, useRef } from 'preact/hooks';
import type { RefObject } from 'preact';
import { EditorView } from '@codemirror/view';
import type { Extension } from '@codemirror/state';

/** How many reported texts are remembered as possible echoes (a parent that never passes them back). */
const MAX_ECHOES = 100;

/**
 * Wires a view's text to a `value` prop: returns the update listener to add to the view's
 * extensions (it reports changes to `onChange`) and, in an effect, replaces the document only
 * when `value` is not one of the view's own texts.
 */
export function useOwnedText(view: RefObject<EditorView | null>, value: string, onChange: RefObject<((text: string) => void) | undefined>) {
  const emitted = useRef<string[]>([]);
  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const echo = emitted.current.indexOf(value);
    if (echo >= 0) { emitted.current.splice(0, echo + 1); return; }
    emitted.current = [];
    if (v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);
  const listener = useRef<Extension | null>(null);
  listener.current ??= EditorView.updateListener.of((u) => {
    if (!u.docChanged) return;
    const text = u.state.doc.toString();
    emitted.current.push(text);
    if (emitted.current.length > MAX_ECHOES) emitted.current.shift();
    onChange.current?.(text);
  });
  return listener.current;
}
