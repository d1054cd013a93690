// Page-level messages: outcomes to the polite role=status region, errors to the assertive
// role=alert region. Both regions are in index.html from the first byte (not rendered later), so
// screen readers announce what is written into them.
const region = (id: string) => document.getElementById(id) as HTMLElement;

function write(id: string, text: string): void {
  const el = region(id);
  el.textContent = text;
  el.classList.toggle('visible', text !== '');
}

export function say(text: string): void { write('alert', ''); write('status', text); }
export function warn(text: string): void { write('status', ''); write('alert', text); }
export function clearMessages(): void { write('status', ''); write('alert', ''); }

let pending = '';
/** An outcome to show on the screen the console is navigating to (a navigation clears messages). */
export function sayAfterNavigation(text: string): void { pending = text; }

/** Called on each navigation: clears the last screen's messages, then shows a pending outcome. */
export function navigated(): void {
  clearMessages();
  if (pending) { say(pending); pending = ''; }
}
