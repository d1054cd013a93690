// Text contrast inside a CodeMirror editor (its shadow root, where axe-core's colour-contrast rule
// does not look at every token), or inside any element (tab buttons, whose text colour Pico
// redefines and axe-core leaves undecided): every text node's colour against the background actually behind
// it (the alpha layers of its ancestors composited, through the shadow host), as WCAG 2 computes
// the ratio. Returns the texts under `min` (4.5 for normal text).
import type { Page } from 'playwright-core';

export async function lowContrastIn(page: Page, hostSelector: string, min = 4.5): Promise<string[]> {
  await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => undefined))));
  return page.evaluate(({ sel, min: least }) => {
    const parse = (c: string): [number, number, number, number] => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return [0, 0, 0, 0];
      const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const over = (top: number[], under: number[]) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
    const lum = (c: number[]) => {
      const [r, g, b] = c.slice(0, 3).map((v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const up = (el: Element): Element | null => el.parentElement ?? ((el.getRootNode() as ShadowRoot).host ?? null);
    const behind = (el: Element) => {
      const layers: number[][] = [];
      for (let e: Element | null = el; e; e = up(e)) {
        const bg = parse(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] === 1) break;
      }
      let c = [255, 255, 255, 1];
      for (const l of layers.reverse()) c = over(l, c);
      return c;
    };
    // An editor's host: its shadow root; any other element: itself and what it holds.
    const host = document.querySelector(sel)!;
    const root = host.shadowRoot ?? host;
    const out: string[] = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = (n.textContent ?? '').trim();
      const el = n.parentElement;
      if (!text || !el || el.closest('[aria-hidden="true"]')) continue;
      const bg = behind(el);
      const fg = over(parse(getComputedStyle(el).color), bg);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < least) out.push(`"${text.slice(0, 30)}" ${getComputedStyle(el).color} on rgb(${bg.slice(0, 3).map(Math.round).join(',')}): ${ratio.toFixed(2)}`);
    }
    return out;
  }, { sel: hostSelector, min });
}
