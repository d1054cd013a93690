// Alert shapes shared by the alert screens.
import type { Body } from '../../api/types';

export type Alert = Body<'/api/workspaces/{ws}/alerts/{id}', 'get'>;

/** A condition as a sentence: "rows > 0", "value of n >= 10". */
export function conditionText(c: unknown): string {
  const x = c as { type?: string; op?: string; threshold?: number; column?: string } | null;
  if (!x?.type) return '';
  return `${x.type === 'value' ? `value${x.column ? ` of ${x.column}` : ''}` : 'rows'} ${x.op} ${x.threshold}`;
}
