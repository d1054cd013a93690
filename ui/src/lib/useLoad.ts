// Loads a screen's data and reloads it on demand; answers that arrive after the screen changed are
// dropped, and failures are reported where they happen (a 401 ends the session).
import { useEffect, useRef, useState } from 'preact/hooks';
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

/** Moves focus to the element with this id after the next render (a re-rendered row's control). */
export function useFocusAfter(): (id: string) => void {
  const [target, setTarget] = useState<{ id: string } | null>(null);
  useEffect(() => {
    if (target) document.getElementById(target.id)?.focus();
  });
  return (id: string) => setTarget({ id });
}
