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
  { key: 'triggers', label: 'Triggers', href: (ws) => href.page(ws, 'triggers'), min: 'ws_viewer', routes: ['triggers'] },
  { key: 'files', label: 'Files', href: (ws) => href.page(ws, 'files'), min: 'ws_viewer', routes: ['files'] },
  { key: 'secrets', label: 'Secrets', href: (ws) => href.page(ws, 'secrets'), min: 'ws_viewer', routes: ['secrets'] },
  { key: 'apps', label: 'Apps', href: (ws) => href.apps(ws), min: 'ws_viewer', routes: ['apps', 'app', 'app-open'] },
  { key: 'engines', label: 'Engines', href: (ws) => href.engines(ws), min: 'ws_viewer', routes: ['engines'] },
  { key: 'alerts', label: 'Alerts', href: (ws) => href.alerts(ws), min: 'ws_viewer', routes: ['alerts', 'alert'] },
  { key: 'reports', label: 'Reports', href: (ws) => href.reports(ws), min: 'ws_viewer', routes: ['reports', 'report'] },
  { key: 'data-api', label: 'Data API', href: (ws) => href.dataApi(ws), min: 'ws_viewer', routes: ['data-api'] },
  { key: 'catalog', label: 'Catalog', href: (ws) => href.catalog(ws), min: 'ws_viewer', routes: ['catalog', 'catalog-table', 'catalog-view'] },
  { key: 'sql', label: 'SQL', href: (ws) => href.sql(ws), min: 'ws_viewer', routes: ['sql'] },
  { key: 'connections', label: 'Connections', href: (ws) => href.page(ws, 'connections'), min: 'ws_viewer', routes: ['connections'] },
  { key: 'policies', label: 'Policies', href: (ws) => href.page(ws, 'policies'), min: 'ws_admin', routes: ['policies'] },
  { key: 'tags', label: 'Tags', href: (ws) => href.page(ws, 'tags'), min: 'ws_admin', routes: ['tags'] },
  { key: 'members', label: 'Members', href: (ws) => href.members(ws), min: 'ws_admin', routes: ['members'] },
];
