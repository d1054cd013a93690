// Loads a screen's data and reloads it on demand; answers that arrive after the screen changed are
// dropped, and failures are reported where they happen (a 401 ends the session).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { reportTo, useSession } from './session';

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; reload(): Promise<void> } {
  const session = useSession();
  // What was loaded, with the deps it was loaded for. A render whose deps differ shows nothing
  // loaded: resetting in the effect came one frame late, so the first render after a change
  // showed the previous deps' data as the new one's (namespace files showed the last namespace's
  // listing, and its upload form, which the effect then replaced: a file chosen in it was lost).
  const [state, setState] = useState<{ for: unknown[]; data?: T; error?: unknown }>({ for: deps });
  const current = sameDeps(state.for, deps);
  const seq = useRef(0);
  const reload = async () => {
    const mine = ++seq.current;
    try {
      const d = await load();
      if (mine === seq.current) setState({ for: deps, data: d });
    } catch (err) {
      if (mine !== seq.current) return;
      // a failed reload keeps what is shown, as before
      setState((s) => ({ for: deps, data: sameDeps(s.for, deps) ? s.data : undefined, error: err }));
      reportTo(session)(err);
    }
  };
  useEffect(() => { setState({ for: deps }); void reload(); return () => { seq.current++; }; }, deps);
  return { data: current ? state.data : undefined, error: current ? state.error : undefined, reload };
}

function sameDeps(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
}

/**
 * Moves focus to the element with this id once a render shows it enabled (a re-rendered row's
 * control). A layout effect, so focus moves in the same commit that shows the outcome's message
 * (a deferred effect left a moment where the message was up and focus on the body), and the
 * target is dropped once reached, so later renders never pull focus back.
 */
export function useFocusAfter(): (id: string) => void {
  const target = useRef<string | null>(null);
  const [, rerender] = useState(0);
  useLayoutEffect(() => {
    if (!target.current) return;
    const el = document.getElementById(target.current) as HTMLButtonElement | null;
    if (el && !el.disabled) { el.focus(); target.current = null; }
  });
  return (id: string) => { target.current = id; rerender((n) => n + 1); };
}
