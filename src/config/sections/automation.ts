// Alerts and reports (SPEC 8 automation).
import { count, str, optStr, bool, strList, section } from '../builders.js';

export const automation = section('alerts and reports', {
  enabled: bool(true, 'run the schedule ticker'),
  tick_interval_secs: count(30, 'schedule tick'),
  webhook_allow_hosts: strList([], 'hosts a webhook may reach though they resolve to private address space'),
  renderer_url: str('http://renderer:8080', 'screenshot renderer base URL'),
  public_url: str('http://svc:8080', 'base URL the renderer uses to reach the server'),
  browser_url: optStr('base URL in notification links; unset falls back to `automation.public_url`'),
});
