// The console's navigation: one entry per workspace screen, shown to the roles that may use it.
// Later components add their screens here (catalog, engines and the SQL console, apps, the Data
// API, alerts): an entry with its group, its label, its link and the least role it needs; entries
// are listed in the order shown, group by group.
import type { WorkspaceRole } from './api/types';
import { href, type Route } from './lib/router';

/** The headings the entries are grouped under, in the order shown (an empty group is not shown). */
export const WORKSPACE_GROUPS = ['Workflows', 'Data', 'Monitoring', 'Administration'] as const;

export interface WorkspaceScreen {
  key: string;
  group: (typeof WORKSPACE_GROUPS)[number];
  label: string;
  href(ws: string): string;
  min: WorkspaceRole;
  /** Route names that belong to this entry (for aria-current). */
  routes: Array<Route['name']>;
}

export const WORKSPACE_SCREENS: WorkspaceScreen[] = [
  { key: 'flows', group: 'Workflows', label: 'Flows', href: (ws) => href.flows(ws), min: 'ws_viewer', routes: ['flows', 'flow', 'flow-new'] },
  { key: 'executions', group: 'Workflows', label: 'Executions', href: (ws) => href.executions(ws), min: 'ws_viewer', routes: ['executions', 'execution'] },
  { key: 'triggers', group: 'Workflows', label: 'Triggers', href: (ws) => href.page(ws, 'triggers'), min: 'ws_viewer', routes: ['triggers'] },
  { key: 'files', group: 'Workflows', label: 'Files', href: (ws) => href.page(ws, 'files'), min: 'ws_viewer', routes: ['files'] },
  { key: 'secrets', group: 'Workflows', label: 'Secrets', href: (ws) => href.page(ws, 'secrets'), min: 'ws_viewer', routes: ['secrets'] },
  { key: 'catalog', group: 'Data', label: 'Catalog', href: (ws) => href.catalog(ws), min: 'ws_viewer', routes: ['catalog', 'catalog-table', 'catalog-view'] },
  { key: 'sql', group: 'Data', label: 'SQL', href: (ws) => href.sql(ws), min: 'ws_viewer', routes: ['sql'] },
  { key: 'engines', group: 'Data', label: 'Engines', href: (ws) => href.engines(ws), min: 'ws_viewer', routes: ['engines'] },
  { key: 'apps', group: 'Data', label: 'Apps', href: (ws) => href.apps(ws), min: 'ws_viewer', routes: ['apps', 'app', 'app-open'] },
  { key: 'data-api', group: 'Data', label: 'Data API', href: (ws) => href.dataApi(ws), min: 'ws_viewer', routes: ['data-api'] },
  { key: 'alerts', group: 'Monitoring', label: 'Alerts', href: (ws) => href.alerts(ws), min: 'ws_viewer', routes: ['alerts', 'alert'] },
  { key: 'reports', group: 'Monitoring', label: 'Reports', href: (ws) => href.reports(ws), min: 'ws_viewer', routes: ['reports', 'report'] },
  { key: 'connections', group: 'Administration', label: 'Connections', href: (ws) => href.page(ws, 'connections'), min: 'ws_viewer', routes: ['connections'] },
  { key: 'policies', group: 'Administration', label: 'Policies', href: (ws) => href.page(ws, 'policies'), min: 'ws_admin', routes: ['policies'] },
  { key: 'tags', group: 'Administration', label: 'Tags', href: (ws) => href.page(ws, 'tags'), min: 'ws_admin', routes: ['tags'] },
  { key: 'members', group: 'Administration', label: 'Members', href: (ws) => href.members(ws), min: 'ws_admin', routes: ['members'] },
];
