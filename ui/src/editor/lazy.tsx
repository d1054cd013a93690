// CodeMirror and its language modes are loaded only when a screen shows an editor, so the first
// load of the console stays small (Vite splits each dynamic import into its own hashed chunk).
import { lazy } from '../lib/lazy';
import type { YamlEditorProps } from './YamlEditor';
import type { SqlEditorProps } from './SqlEditor';

export const Editor = lazy<YamlEditorProps>(() => import('./YamlEditor').then((m) => m.YamlEditor), 'Loading the editor…');
export const SqlEditor = lazy<SqlEditorProps>(() => import('./SqlEditor').then((m) => m.SqlEditor), 'Loading the editor…');
export type { YamlEditorProps, Problem, YamlEditorHandle } from './YamlEditor';
