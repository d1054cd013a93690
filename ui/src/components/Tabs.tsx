// Tabs as the WAI-ARIA tabs pattern: a tablist of buttons (arrow keys, Home and End move between
// them, the chosen one is the only one in the tab order) and the chosen panel, labelled by its
// tab. The parent keeps which tab is shown (in the URL where a tab is worth a link).
import type { ComponentChildren } from 'preact';
import '../styles/screens.css';

export interface TabDef { id: string; label: ComponentChildren }

export function Tabs({ id, label, tabs, current, onSelect, children }: { id: string; label: string; tabs: TabDef[]; current: string; onSelect(id: string): void; children: ComponentChildren }) {
  const move = (ev: KeyboardEvent) => {
    const i = tabs.findIndex((t) => t.id === current);
    const next = ev.key === 'ArrowRight' ? (i + 1) % tabs.length : ev.key === 'ArrowLeft' ? (i - 1 + tabs.length) % tabs.length
      : ev.key === 'Home' ? 0 : ev.key === 'End' ? tabs.length - 1 : -1;
    if (next < 0) return;
    ev.preventDefault();
    onSelect(tabs[next].id);
    queueMicrotask(() => document.getElementById(`${id}-tab-${tabs[next].id}`)?.focus());
  };
  return (
    <div class="tabset" id={id}>
      <div role="tablist" aria-label={label} class="tablist" onKeyDown={move}>
        {tabs.map((t) => (
          <button key={t.id} type="button" role="tab" id={`${id}-tab-${t.id}`} aria-selected={t.id === current ? 'true' : 'false'}
            aria-controls={`${id}-panel`} tabIndex={t.id === current ? 0 : -1} class="tab" onClick={() => onSelect(t.id)}>{t.label}</button>
        ))}
      </div>
      <div role="tabpanel" id={`${id}-panel`} aria-labelledby={`${id}-tab-${current}`} class="tabpanel" tabIndex={0}>{children}</div>
    </div>
  );
}
