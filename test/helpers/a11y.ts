// Accessibility check of what a page shows, with axe-core run inside the page. The script is
// evaluated through the DevTools protocol (page.evaluate), which the page's CSP does not govern,
// so the console keeps `script-src 'self'` while it is tested.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface A11yViolation { id: string; impact: string | null; help: string; targets: string[] }

/**
 * The serious and critical WCAG 2.x A/AA violations on the page as it is now. `iframes: false`
 * checks the page without its frames (a cross-origin frame without axe-core in it would otherwise
 * hold the run until axe's frame timeout).
 */
export async function seriousViolations(page: Page, opts: { iframes?: boolean } = {}): Promise<A11yViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  // Colours under a CSS transition (Pico animates link and button colours, e.g. after a theme
  // switch) are read half way: wait for running animations to end first.
  await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => undefined))));
  const found = await page.evaluate(async (iframes) => {
    const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'], iframes });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => String(n.target[0])) }));
  }, opts.iframes ?? true);
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
