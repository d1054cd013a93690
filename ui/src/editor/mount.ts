// What every CodeMirror editor of the console shares: the theme (the page's Pico custom
// properties reach the shadow root by inheritance) and mounting in an open shadow root, where
// CodeMirror's run-time styles are constructed stylesheets that the CSP (`style-src 'self'`)
// does not govern (a <style> element in the document would be refused).
import { EditorView } from '@codemirror/view';
import type { EditorState } from '@codemirror/state';

export const editorTheme = EditorView.theme({
  '&': { fontSize: '0.9rem', border: '1px solid var(--pico-form-element-border-color)', borderRadius: 'var(--pico-border-radius)', backgroundColor: 'var(--pico-form-element-background-color)', color: 'var(--pico-color)' },
  '.cm-content': { fontFamily: 'var(--pico-font-family-monospace, monospace)', caretColor: 'var(--pico-color)' },
  '.cm-gutters': { backgroundColor: 'var(--pico-card-sectioning-background-color)', color: 'var(--pico-muted-color)', border: 'none' },
  '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'rgba(127,127,127,0.10)' },
  '&.cm-focused': { outline: '3px solid #f59e0b', outlineOffset: '2px' },
  '.cm-scroller': { minHeight: '12rem', maxHeight: '70vh' },
});

/** Mounts an editor in the host's open shadow root; returns the view and its teardown. */
export function mountInShadow(host: HTMLElement, state: EditorState): { view: EditorView; destroy(): void } {
  const shadow = host.shadowRoot ?? host.attachShadow({ mode: 'open' });
  const parent = document.createElement('div');
  shadow.replaceChildren(parent);
  const view = new EditorView({ root: shadow, parent, state });
  return { view, destroy() { view.destroy(); parent.remove(); } };
}
