// The console's navigation: one entry per workspace screen, shown to the roles that may use it.
// Later components add their screens here (catalog, engines and the SQL console, apps, the Data
// API, alerts): an entry with its label, its link and the least role it needs.
import type { WorkspaceRole } from './api/types';
import { href, type Route } from './lib/router';

export interface WorkspaceScreen {
  key: string;
  label: string;
  href(ws: string): string;
  min: WorkspaceRole;
  /** Route names that belong to this entry (for aria-current). */
  routes: Array<Route['name']>;
}

export const WORKSPACE_SCREENS: WorkspaceScreen[] = [
  { key: 'flows', label: 'Flows', href: (ws) => href.flows(ws), min: 'ws_viewer', routes: ['flows', 'flow', 'flow-new'] },
  { key: 'executions', label: 'Executions', href: (ws) => href.executions(ws), min: 'ws_viewer', routes: ['executions', 'execution'] },
  { key: 'members', label: 'Members', href: (ws) => href.members(ws), min: 'ws_admin', routes: ['members'] },
];
