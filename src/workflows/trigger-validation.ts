// Trigger validation, pure (no I/O): cron expressions and time zones, trigger inputs against the
// flow's inputs, a flow trigger naming its own flow, webhook triggers of a flow with a required
// input without default. Called by flows.ts validateSource at save time and by the trigger tick.
import { Cron } from 'croner';
import { resolveInputs, FlowValidationError, type FlowDef, type ValidationProblem } from './flow.js';

const CRON_MODE = '5-or-6-parts' as const;

export function validTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The croner schedule of an expression, or the problem with it. */
export function parseCron(expr: string, timezone: string): Cron | string {
  if (!validTimezone(timezone)) return `unknown time zone "${timezone}" (use an IANA name such as Europe/Paris, or UTC)`;
  let cron: Cron;
  try {
    cron = new Cron(expr, { timezone, paused: true, mode: CRON_MODE });
  } catch (err) {
    return `invalid cron expression "${expr}": ${(err as Error).message.replace(/^CronPattern: /, '')}`;
  }
  try {
    if (cron.nextRun(new Date()) === null) return `the cron expression "${expr}" never fires`;
  } catch (err) {
    return `invalid cron expression "${expr}": ${(err as Error).message}`;
  }
  return cron;
}

/**
 * Problems of a flow's triggers that the schema cannot see: cron expressions (5 fields, or 6 with
 * seconds first; nicknames such as @daily), time zones, trigger inputs against the flow's inputs,
 * a flow trigger naming the flow itself, and webhook triggers of a flow with a required input
 * without default (a webhook starts executions with the defaults).
 */
export function validateTriggers(def: FlowDef): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  def.triggers.forEach((t, i) => {
    const at = `triggers[${i}]`;
    if (t.type === 'schedule') {
      if (!validTimezone(t.timezone)) problems.push({ path: `${at}.timezone`, message: `unknown time zone "${t.timezone}" (use an IANA name such as Europe/Paris, or UTC)` });
      else {
        const c = parseCron(t.cron, t.timezone);
        if (typeof c === 'string') problems.push({ path: `${at}.cron`, message: c });
      }
    }
    if (t.type === 'schedule' || t.type === 'flow') {
      try {
        resolveInputs(def.inputs, t.inputs ?? {});
      } catch (err) {
        if (!(err instanceof FlowValidationError)) throw err;
        for (const p of err.problems) problems.push({ path: `${at}.${p.path}`, message: p.message });
      }
    }
    if (t.type === 'flow' && t.conditions.namespace === def.namespace && t.conditions.flowId === def.id) {
      problems.push({ path: `${at}.conditions`, message: 'a flow cannot be triggered by its own executions (it would start itself for ever)' });
    }
    if (t.type === 'webhook') {
      for (const inp of def.inputs) {
        if (inp.required && inp.defaults === undefined) problems.push({ path: `${at}`, message: `a webhook starts executions with the inputs' defaults: input "${inp.id}" is required and has no default` });
      }
    }
  });
  return problems;
}
