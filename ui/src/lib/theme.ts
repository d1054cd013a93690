// Light, dark, or the system's choice (the default). Pico CSS reads `data-theme` on <html>; the
// choice is kept in localStorage, and set before the first render so the page never flashes.
export type Theme = 'auto' | 'light' | 'dark';
const KEY = 'svc-theme';

export function currentTheme(): Theme {
  try {
    const t = localStorage.getItem(KEY);
    return t === 'light' || t === 'dark' ? t : 'auto';
  } catch { return 'auto'; }
}

export function applyTheme(t: Theme): void {
  if (t === 'auto') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', t);
  try {
    if (t === 'auto') localStorage.removeItem(KEY); else localStorage.setItem(KEY, t);
  } catch { /* storage disabled (private mode): the choice lasts for this page only */ }
}

export const nextTheme = (t: Theme): Theme => (t === 'auto' ? 'dark' : t === 'dark' ? 'light' : 'auto');
