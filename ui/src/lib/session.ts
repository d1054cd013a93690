// Who is signed in, shared by every screen. A 401 anywhere means the session ended (expired,
// revoked, back-channel logout): the sign-in view comes back with a notice.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { ApiError, errorText } from '../api/client';
import type { AuthConfig, Me } from '../api/types';
import { warn } from './messages';

export interface Session {
  config: AuthConfig;
  me: Me;
  /** Reloads GET /api/me (after a change to the caller's own roles). */
  refreshMe(): Promise<Me>;
  /** Back to the sign-in view, with an optional error notice. */
  end(notice?: string): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in view');
  return s;
}

export const isPlatformAdmin = (me: Me): boolean => me.platform_roles.includes('platform_admin');

/** Reports a failed request where it happened; a 401 ends the session instead. */
export function reportTo(session: Session, setLocal?: (text: string) => void) {
  return (err: unknown): void => {
    if (err instanceof ApiError && err.status === 401) { session.end('Your session has ended. Sign in again.'); return; }
    if (setLocal) setLocal(errorText(err)); else warn(errorText(err));
  };
}
