// Alert and report shapes and words shared by their screens. Both are automations of one API
// (`/api/workspaces/{ws}/alerts` and `.../reports`, the same view and routes): the screens are
// one set of components parameterised by kind.
import type { Body } from '../../api/types';
import { href } from '../../lib/router';

export type Kind = 'alert' | 'report';
export type Alert = Body<'/api/workspaces/{ws}/alerts/{id}', 'get'>;

/** The API paths of a kind. Both kinds answer the same view, so the alert paths' types serve both. */
export const paths = (kind: Kind) => ({
  list: (kind === 'alert' ? '/api/workspaces/{ws}/alerts' : '/api/workspaces/{ws}/reports') as '/api/workspaces/{ws}/alerts',
  one: (kind === 'alert' ? '/api/workspaces/{ws}/alerts/{id}' : '/api/workspaces/{ws}/reports/{id}') as '/api/workspaces/{ws}/alerts/{id}',
  run: (kind === 'alert' ? '/api/workspaces/{ws}/alerts/{id}/run' : '/api/workspaces/{ws}/reports/{id}/run') as '/api/workspaces/{ws}/alerts/{id}/run',
  evaluations: (kind === 'alert' ? '/api/workspaces/{ws}/alerts/{id}/evaluations' : '/api/workspaces/{ws}/reports/{id}/evaluations') as '/api/workspaces/{ws}/alerts/{id}/evaluations',
  deliveries: (kind === 'alert' ? '/api/workspaces/{ws}/alerts/{id}/deliveries' : '/api/workspaces/{ws}/reports/{id}/deliveries') as '/api/workspaces/{ws}/alerts/{id}/deliveries',
});

/** Words and links of a kind. */
export const KIND = {
  alert: { one: 'alert', many: 'alerts', title: 'Alerts', list: href.alerts, create: href.alertNew, page: href.alert },
  report: { one: 'report', many: 'reports', title: 'Reports', list: href.reports, create: href.reportNew, page: href.report },
} as const;

/** A condition as a sentence: "rows > 0", "value of n >= 10". */
export function conditionText(c: unknown): string {
  const x = c as { type?: string; op?: string; threshold?: number; column?: string } | null;
  if (!x?.type) return '';
  return `${x.type === 'value' ? `value${x.column ? ` of ${x.column}` : ''}` : 'rows'} ${x.op} ${x.threshold}`;
}

/** A report's content as words: "CSV of the result", "screenshot of /path". */
export function contentText(c: unknown): string {
  const x = c as { type?: string; path?: string } | null;
  if (!x?.type) return '';
  return x.type === 'screenshot' ? `screenshot of ${x.path ?? ''}` : x.type === 'csv' ? 'CSV of the result' : 'table of the result';
}

/** What an automation checks or sends, in words. */
export const whatText = (a: Alert): string => (a.kind === 'report' ? contentText(a.content) : conditionText(a.condition));
