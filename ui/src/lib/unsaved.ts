// Unsaved forms are guarded (issue 28: flow edits were lost silently). While a screen says it has
// unsaved changes, leaving it asks first: a link to another screen (clicked, or Back/Forward,
// which changes the hash), and closing or reloading the tab (beforeunload). A screen that leaves
// on purpose after saving says so with `leaveWithoutAsking`.
import { useEffect } from 'preact/hooks';

interface Guard { message: string; keeps(hash: string): boolean }
let active: Guard | null = null;
let approved = false;

/** Whether a move to `hash` may go ahead (asks when a guard is up and the move leaves it). */
export function mayLeave(hash: string): boolean {
  if (approved) { approved = false; return true; }
  if (!active || active.keeps(hash)) return true;
  return window.confirm(active.message);
}

/** The next navigation goes without asking (a screen leaving after it saved). */
export function leaveWithoutAsking(): void { approved = true; }

function onClick(ev: MouseEvent) {
  if (!active || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = (ev.target as Element | null)?.closest?.('a[href^="#/"]') as HTMLAnchorElement | null;
  if (!a || a.target === '_blank') return;
  const hash = a.getAttribute('href')!;
  if (hash === location.hash) return;
  if (mayLeave(hash)) { approved = true; return; }
  ev.preventDefault();
  ev.stopPropagation();
}

function onUnload(ev: BeforeUnloadEvent) {
  if (!active) return;
  ev.preventDefault();
  ev.returnValue = '';
}

/**
 * Guards the screen while `dirty`: `keeps(hash)` says which moves stay on the screen (its own
 * tabs, which keep the form's state) and so need no question.
 */
export function useUnsavedGuard(dirty: boolean, message: string, keeps: (hash: string) => boolean = () => false): void {
  useEffect(() => {
    if (!dirty) return;
    const g: Guard = { message, keeps };
    active = g;
    document.addEventListener('click', onClick, true);
    window.addEventListener('beforeunload', onUnload);
    return () => {
      if (active === g) active = null;
      document.removeEventListener('click', onClick, true);
      window.removeEventListener('beforeunload', onUnload);
    };
  }, [dirty, message]);
}
