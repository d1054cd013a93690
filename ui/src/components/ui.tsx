// The console's small component set on top of Pico CSS (which styles the semantic elements):
// tables with captions and scoped headers, source badges, fields with labels, form error regions,
// and a busy-aware button. Everything renders text through Preact (never HTML strings), so names
// from an identity provider can never become markup.
import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export function Badge({ idp }: { idp: boolean }) {
  return idp
    ? <span class="badge idp" title="from the identity provider’s groups claim">identity provider</span>
    : <span class="badge local" title="managed in svc">local</span>;
}

export function RoleTag({ role }: { role: string }) {
  return <span class={`role ${role}`}>{role}</span>;
}

/** A table with a caption for screen readers and column headers with scope. */
export function Table({ caption, headers, id, children }: { caption: string; headers: string[]; id?: string; children: ComponentChildren }) {
  return (
    // A wide table scrolls sideways inside its wrapper, which therefore takes keyboard focus
    // (arrow keys scroll it) and is named after the table.
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption}>
      <table id={id} class="striped">
        <caption class="visually-hidden">{caption}</caption>
        <thead><tr>{headers.map((h) => <th scope="col" key={h}>{h}</th>)}</tr></thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The assertive error region of a form: always in the DOM, filled when something fails. */
export function FormError({ text }: { text: string }) {
  return <p class={`message error form-error${text ? ' visible' : ''}`} role="alert" aria-live="assertive" aria-atomic="true">{text}</p>;
}

/** A time to the second (issue 28: times were shown to the minute). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** Runs an async action with the button disabled and aria-busy set, so it cannot run twice. */
export function useBusy(): [boolean, <T>(fn: () => Promise<T>) => Promise<T>] {
  const [busy, setBusy] = useState(false);
  const run = async <T,>(fn: () => Promise<T>): Promise<T> => {
    setBusy(true);
    try { return await fn(); } finally { setBusy(false); }
  };
  return [busy, run];
}

export function Button(props: ButtonHTMLAttributes<HTMLButtonElement> & { busy?: boolean }) {
  const { busy, ...rest } = props;
  return <button type="button" {...rest} disabled={busy || rest.disabled} aria-busy={busy ? 'true' : undefined} />;
}
