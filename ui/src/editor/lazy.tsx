// CodeMirror and the YAML parser are loaded only when a screen shows an editor, so the first load
// of the console stays small (Vite splits the dynamic import into its own hashed chunk).
import { useEffect, useState } from 'preact/hooks';
import type { YamlEditorProps } from './YamlEditor';

type EditorComponent = (p: YamlEditorProps) => preact.JSX.Element;
let loaded: EditorComponent | null = null;

export function Editor(props: YamlEditorProps) {
  const [Comp, setComp] = useState<EditorComponent | null>(() => loaded);
  useEffect(() => {
    if (Comp) return;
    void import('./YamlEditor').then((m) => { loaded = m.YamlEditor; setComp(() => m.YamlEditor); });
  }, []);
  return Comp ? <Comp {...props} /> : <p aria-busy="true">Loading the editor…</p>;
}
export type { YamlEditorProps, Problem } from './YamlEditor';
