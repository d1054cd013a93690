// Loads a screen's data and reloads it on demand; answers that arrive after the screen changed are
// dropped, and failures are reported where they happen (a 401 ends the session).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { reportTo, useSession } from './session';

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; reload(): Promise<void> } {
  const session = useSession();
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const seq = useRef(0);
  const reload = async () => {
    const mine = ++seq.current;
    try {
      const d = await load();
      if (mine === seq.current) { setData(d); setError(undefined); }
    } catch (err) {
      if (mine !== seq.current) return;
      setError(err);
      reportTo(session)(err);
    }
  };
  useEffect(() => { setData(undefined); void reload(); return () => { seq.current++; }; }, deps);
  return { data, error, reload };
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
