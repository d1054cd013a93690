// Copy buttons beside ids and URLs: the text goes to the clipboard and the outcome is announced
// in the page's status region; where the clipboard is refused, the person is told to select it.
import { say } from '../lib/messages';
import '../styles/screens.css';

export function copyText(text: string, what: string): void {
  const done = () => say(`Copied ${what}.`);
  if (!navigator.clipboard) { say(`Select the ${what} and copy it.`); return; }
  void navigator.clipboard.writeText(text).then(done, () => say(`Select the ${what} and copy it.`));
}

export function CopyButton({ text, what, label }: { text: string; what: string; label?: string }) {
  return (
    <button type="button" class="copy secondary outline" aria-label={label ?? `Copy ${what}`} title={`Copy ${what}`} onClick={() => copyText(text, what)}>
      <svg aria-hidden="true" focusable="false" width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" stroke-width="1.5"><rect x="5.5" y="5.5" width="8" height="8" rx="1.5" /><path d="M10.5 3.5v-1a1 1 0 0 0-1-1h-6a1 1 0 0 0-1 1v6a1 1 0 0 0 1 1h1" /></svg>
    </button>
  );
}

/** An id shown short (its first 8 characters), with the whole id on hover and a Copy button. */
export function ShortId({ id, href, what = 'id' }: { id: string; href?: string; what?: string }) {
  const code = <code title={id}>{id.slice(0, 8)}</code>;
  return <span class="short-id">{href ? <a href={href} aria-label={`${what} ${id.slice(0, 8)}`}>{code}</a> : code}<CopyButton text={id} what={what} label={`Copy ${what} ${id.slice(0, 8)}`} /></span>;
}
