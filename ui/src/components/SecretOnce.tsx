// A secret the server shows once (a new or rotated client secret): a panel with the value in a
// read-only field, Copy and "I have stored it". Only the caller's state holds it, so leaving or
// reloading the screen forgets it; the server keeps only a hash.
import type { ComponentChildren } from 'preact';
import { say } from '../lib/messages';
import { Button } from './ui';

export function SecretOnce({ title, label, value, onDone, children }: { title: string; label: string; value: string; onDone(): void; children?: ComponentChildren }) {
  return (
    <article class="secret-once" aria-labelledby="h-secret" id="secret-panel">
      <h2 id="h-secret">{title}</h2>
      <p>Copy it now and keep it in a secret store: it is not shown again.</p>
      {children}
      <label for="client-secret">{label}</label>
      <input id="client-secret" readOnly value={value} spellcheck={false} autocomplete="off" onFocus={(e) => e.currentTarget.select()} />
      <div class="row">
        <Button onClick={() => { void navigator.clipboard?.writeText(value).then(() => say('Copied the secret.'), () => say('Select the secret and copy it.')); }}>Copy</Button>
        <Button class="secondary" id="secret-done" onClick={onDone}>I have stored it</Button>
      </div>
    </article>
  );
}
