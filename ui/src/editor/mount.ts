// What every CodeMirror editor of the console shares: the theme (the page's Pico custom
// properties reach the shadow root by inheritance) and mounting in an open shadow root, where
// CodeMirror's run-time styles are constructed stylesheets that the CSP (`style-src 'self'`)
// does not govern (a <style> element in the document would be refused).
import { EditorView } from '@codemirror/view';
import type { EditorState } from '@codemirror/state';
import { HighlightStyle } from '@codemirror/language';
import { tags as t } from '@lezer/highlight';

/**
 * Token colours from the page's custom properties (app.css, `--svc-code-*`), one set per theme,
 * each at 4.5:1 or more on the editor's background and on its active line. CodeMirror's default
 * style has fixed light-theme colours (YAML keys rgb(0,0,204) read at 1.44:1 on the dark theme).
 */
export const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.operatorKeyword, t.modifier, t.controlKeyword, t.definitionKeyword], color: 'var(--svc-code-keyword)' },
  { tag: [t.string, t.special(t.string), t.regexp, t.character], color: 'var(--svc-code-string)' },
  { tag: [t.number, t.bool, t.null, t.atom, t.unit], color: 'var(--svc-code-number)' },
  { tag: [t.comment, t.lineComment, t.blockComment, t.meta, t.documentMeta], color: 'var(--svc-code-comment)', fontStyle: 'italic' },
  { tag: [t.propertyName, t.attributeName, t.definition(t.propertyName)], color: 'var(--svc-code-property)' },
  { tag: [t.typeName, t.className, t.namespace, t.labelName, t.standard(t.name)], color: 'var(--svc-code-type)' },
  { tag: [t.function(t.variableName), t.definition(t.variableName), t.special(t.variableName)], color: 'var(--svc-code-function)' },
  { tag: [t.invalid], color: 'var(--svc-danger)' },
  { tag: t.heading, fontWeight: 'bold' },
  { tag: t.emphasis, fontStyle: 'italic' },
  { tag: t.strong, fontWeight: 'bold' },
  { tag: t.link, textDecoration: 'underline' },
]);

export const editorTheme = EditorView.theme({
  '&': { fontSize: '0.9rem', border: '1px solid var(--pico-form-element-border-color)', borderRadius: 'var(--pico-border-radius)', backgroundColor: 'var(--pico-form-element-background-color)', color: 'var(--pico-color)' },
  '.cm-content': { fontFamily: 'var(--pico-font-family-monospace, monospace)', caretColor: 'var(--pico-color)' },
  '.cm-gutters': { backgroundColor: 'var(--pico-card-sectioning-background-color)', color: 'var(--svc-code-gutter)', border: 'none' },
  '.cm-activeLine, .cm-activeLineGutter': { backgroundColor: 'var(--svc-code-active-line)' },
  '.cm-gutters .cm-activeLineGutter': { color: 'var(--pico-color)' },
  '.cm-tooltip': { backgroundColor: 'var(--pico-card-background-color)', color: 'var(--pico-color)', border: '1px solid var(--pico-muted-border-color)' },
  '.cm-tooltip-autocomplete ul li[aria-selected]': { backgroundColor: 'var(--pico-primary-background)', color: 'var(--pico-primary-inverse)' },
  '.cm-completionDetail, .cm-completionInfo': { color: 'inherit' },
  '.cm-diagnosticText': { color: 'var(--pico-color)' },
  '.cm-selectionBackground, &.cm-focused .cm-selectionBackground, .cm-content ::selection': { backgroundColor: 'var(--svc-code-selection) !important' },
  '&.cm-focused': { outline: '3px solid #f59e0b', outlineOffset: '2px' },
  '.cm-scroller': { minHeight: '12rem', maxHeight: '70vh' },
});

/**
 * The text takes focus with a tab index, so the scrolling area around it has a focusable
 * descendant in every tool's eyes (axe-core does not count a bare contenteditable, and reported a
 * long statement's scrolling editor as a region the keyboard cannot reach).
 */
export const focusable = EditorView.contentAttributes.of({ tabindex: '0' });

/** Mounts an editor in the host's open shadow root; returns the view and its teardown. */
export function mountInShadow(host: HTMLElement, state: EditorState): { view: EditorView; destroy(): void } {
  const shadow = host.shadowRoot ?? host.attachShadow({ mode: 'open' });
  const parent = document.createElement('div');
  shadow.replaceChildren(parent);
  const view = new EditorView({ root: shadow, parent, state });
  return { view, destroy() { view.destroy(); parent.remove(); } };
}
