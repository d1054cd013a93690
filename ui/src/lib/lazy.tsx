// Components loaded when first shown: each dynamic import is its own hashed chunk (Vite/Rolldown
// code splitting), so the first load carries the shell, sign-in and home only, and a screen's
// code (CodeMirror for the editors) arrives when a route needs it (docs/ui.md "First load").
// Once loaded, a component renders at once on later visits.
import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();
/** Calls `f` each time a component has just arrived (the shell then moves focus to its heading). */
export function onLazyShown(f: () => void): () => void {
  listeners.add(f);
  return () => { listeners.delete(f); };
}

export function lazy<P extends object>(load: () => Promise<FunctionComponent<P>>, loading = 'Loading…'): FunctionComponent<P> {
  let loaded: FunctionComponent<P> | null = null;
  return (props: P) => {
    const [Comp, setComp] = useState<FunctionComponent<P> | null>(() => loaded);
    const [failed, setFailed] = useState(false);
    const [arrived, setArrived] = useState(false);
    useEffect(() => {
      if (Comp) return;
      void load().then((c) => { loaded = c; setComp(() => c); setArrived(true); }, () => setFailed(true));
    }, []);
    useEffect(() => { if (arrived) for (const f of [...listeners]) f(); }, [arrived]);
    // A chunk that cannot be fetched (a newer build replaced it, the network dropped): say so.
    if (failed) return <p class="message error visible" role="alert">This screen could not be loaded. Reload the page to try again.</p>;
    return Comp ? <Comp {...props} /> : <p aria-busy="true">{loading}</p>;
  };
}
