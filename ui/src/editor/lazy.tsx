// CodeMirror and its language modes are loaded only when a screen shows an editor, so the first
// load of the console stays small (Vite splits each dynamic import into its own hashed chunk).
import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { YamlEditorProps } from './YamlEditor';
import type { SqlEditorProps } from './SqlEditor';

function lazy<P extends object>(load: () => Promise<FunctionComponent<P>>): FunctionComponent<P> {
  let loaded: FunctionComponent<P> | null = null;
  return (props: P) => {
    const [Comp, setComp] = useState<FunctionComponent<P> | null>(() => loaded);
    useEffect(() => {
      if (Comp) return;
      void load().then((c) => { loaded = c; setComp(() => c); });
    }, []);
    return Comp ? <Comp {...props} /> : <p aria-busy="true">Loading the editor…</p>;
  };
}

export const Editor = lazy<YamlEditorProps>(() => import('./YamlEditor').then((m) => m.YamlEditor));
export const SqlEditor = lazy<SqlEditorProps>(() => import('./SqlEditor').then((m) => m.SqlEditor));
export type { YamlEditorProps, Problem } from './YamlEditor';
