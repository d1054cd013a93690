// The sign-in view: with single sign-on, a primary SSO link and a break-glass button that reveals
// the local form; without it, the email/password form directly (email focused).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok, errorText, ApiError } from '../api/client';
import type { AuthConfig } from '../api/types';
import { clearMessages, warn } from '../lib/messages';


/** The SSO login URL; a deep link (#/groups, ...) is kept through the provider round trip. */
function ssoHref(loginUrl: string): string {
  const u = new URL(loginUrl, location.origin);
  if (u.origin !== location.origin) return loginUrl;
  if (location.hash.startsWith('#/') && location.hash.length > 2) u.searchParams.set('return_to', `/${location.hash}`);
  return u.pathname + u.search;
}

/** The server's message; a rate-limit refusal says when to try again, from its Retry-After. */
export function refusal(err: unknown): string {
  if (!(err instanceof ApiError) || err.status !== 429 || !err.retryAfter) return errorText(err);
  const at = new Date(Date.now() + err.retryAfter * 1000).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const wait = err.retryAfter < 90 ? `${err.retryAfter} seconds` : `${Math.ceil(err.retryAfter / 60)} minutes`;
  return `Too many sign-in attempts. Try again in ${wait}, at ${at}.`;
}

export function SignIn({ config, notice, onSignedIn }: { config: AuthConfig; notice?: string; onSignedIn(): void }) {
  const sso = Boolean(config.sso);
  const [open, setOpen] = useState(!sso);
  const [busy, setBusy] = useState(false);
  const [invalid, setInvalid] = useState(false);
  const email = useRef<HTMLInputElement>(null);
  const password = useRef<HTMLInputElement>(null);

  useEffect(() => {
    document.title = 'Sign in · svc';
    if (notice) warn(notice);
    if (!sso) email.current?.focus();
  }, []);

  const reveal = () => {
    const next = !open;
    setOpen(next);
    if (next) queueMicrotask(() => email.current?.focus());
  };

  const submit = async (ev: Event) => {
    ev.preventDefault();
    clearMessages();
    setBusy(true);
    try {
      await ok(api.POST('/api/auth/login', { body: { email: email.current!.value.trim(), password: password.current!.value } }));
    } catch (err) {
      password.current!.value = '';
      setInvalid(true);
      warn(refusal(err));
      password.current!.focus();
      return;
    } finally {
      setBusy(false);
    }
    password.current!.value = '';
    onSignedIn();
  };

  const form = (
    <form id="local-form" aria-label="Local sign-in" hidden={!open} onSubmit={submit} aria-busy={busy ? 'true' : undefined}>
      <label for="email">Email</label>
      <input ref={email} id="email" name="email" type="email" autocomplete="username" required maxLength={320} spellcheck={false} />
      <label for="password">Password</label>
      <input ref={password} id="password" name="password" type="password" autocomplete="current-password" required maxLength={1024}
        aria-invalid={invalid ? 'true' : undefined} />
      <button type="submit" class={sso ? 'secondary' : undefined} disabled={busy}>Sign in</button>
    </form>
  );

  return (
    <main id="main" tabIndex={-1} class="container narrow">
      <article class="signin" aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to svc</h1>
        {sso ? (
          <>
            <p class="lead">Use your organisation’s account.</p>
            <a class="button block" href={ssoHref(config.sso_login_url ?? '/api/auth/oidc/login')} id="sso-login">Sign in with single sign-on</a>
            <div class="break-glass">
              <button type="button" class="link" id="break-glass" aria-expanded={open ? 'true' : 'false'} aria-controls="local-form" onClick={reveal}>Break-glass sign-in</button>
              <p class="hint">For the local administrator, when single sign-on is unavailable.</p>
              {form}
            </div>
          </>
        ) : (
          <>
            <p class="lead">Sign in with your email and password.</p>
            {form}
          </>
        )}
      </article>
    </main>
  );
}
