// The run form, generated from the flow's declared inputs: a text field for STRING, a number for
// INT and FLOAT, a checkbox for BOOLEAN, a text area for JSON; defaults filled in, required
// inputs marked. The server coerces and checks them again (unknown or missing inputs are a 400).
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api/client';
import { FormError, useBusy } from '../../components/ui';
import { clearMessages, say, sayAfterNavigation } from '../../lib/messages';
import { href } from '../../lib/router';
import { reportTo, useSession } from '../../lib/session';
import { parseFlow, type InputDecl } from './flowSource';

export function RunForm({ ws, flow, onClose }: { ws: string; flow: { namespace: string; id: string; source: string }; onClose(): void }) {
  const session = useSession();
  const [inputs, setInputs] = useState<InputDecl[] | null>(null);
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [err, setErr] = useState('');
  const [busy, run] = useBusy();

  useEffect(() => {
    void parseFlow(flow.source).then((p) => {
      const decl = p?.inputs ?? [];
      setInputs(decl);
      setValues(Object.fromEntries(decl.map((i) => [i.id, i.type === 'BOOLEAN' ? i.defaults === true
        : i.defaults === undefined ? '' : typeof i.defaults === 'string' ? i.defaults : JSON.stringify(i.defaults)])));
    });
  }, [flow.source]);

  const submit = async (ev: Event) => {
    ev.preventDefault();
    clearMessages();
    setErr('');
    const body: Record<string, unknown> = {};
    for (const i of inputs ?? []) {
      const v = values[i.id];
      if (i.type === 'BOOLEAN') { body[i.id] = v === true; continue; }
      if (v === '' || v === undefined) continue; // the flow's default (or a missing-input error)
      if (i.type === 'JSON') {
        try { body[i.id] = JSON.parse(String(v)); } catch { setErr(`Input ${i.id} is not valid JSON.`); document.getElementById(`input-${i.id}`)?.focus(); return; }
      } else {
        body[i.id] = v;
      }
    }
    try {
      const e = await run(() => ok(api.POST('/workflows/v1/{ws}/executions/{namespace}/{id}', { params: { path: { ws, namespace: flow.namespace, id: flow.id } }, body: { inputs: body } })));
      sayAfterNavigation(`Started execution ${e.id} of ${flow.namespace}.${flow.id}.`);
      location.hash = href.execution(ws, e.id);
    } catch (e2) { reportTo(session, setErr)(e2); }
  };

  if (inputs === null) return <p aria-busy="true">Reading the inputs…</p>;
  return (
    <form id="run-form" class="card" onSubmit={submit} aria-labelledby="h-run">
      <h2 id="h-run">Run {flow.namespace}.{flow.id}</h2>
      <FormError text={err} />
      {inputs.length === 0 ? <p class="muted">This flow declares no inputs.</p> : inputs.map((i) => {
        const id = `input-${i.id}`;
        const hint = `${i.type}${i.required ? ', required' : ''}${i.description ? ` — ${i.description}` : ''}`;
        if (i.type === 'BOOLEAN') {
          return <label key={i.id} class="check"><input id={id} type="checkbox" checked={values[i.id] === true} onChange={(e) => setValues({ ...values, [i.id]: e.currentTarget.checked })} /> {i.id} <small class="muted">{hint}</small></label>;
        }
        return (
          <div key={i.id}>
            <label for={id}>{i.id}{i.required ? ' (required)' : ''}</label>
            {i.type === 'JSON'
              ? <textarea id={id} rows={3} spellcheck={false} value={String(values[i.id] ?? '')} aria-describedby={`${id}-hint`} onInput={(e) => setValues({ ...values, [i.id]: e.currentTarget.value })} />
              : i.type === 'STRING'
                ? <input id={id} type="text" required={i.required && i.defaults === undefined}
                  value={String(values[i.id] ?? '')} aria-describedby={`${id}-hint`} onInput={(e) => setValues({ ...values, [i.id]: e.currentTarget.value })} />
                : <input id={id} type="number" step={i.type === 'FLOAT' ? 'any' : '1'} required={i.required && i.defaults === undefined}
                  value={String(values[i.id] ?? '')} aria-describedby={`${id}-hint`} onInput={(e) => setValues({ ...values, [i.id]: e.currentTarget.value })} />}
            <small id={`${id}-hint`}>{hint}</small>
          </div>
        );
      })}
      <div class="row">
        <button type="submit" id="start-run" disabled={busy} aria-busy={busy ? 'true' : undefined}>Start</button>
        <button type="button" class="secondary" onClick={onClose}>Cancel</button>
      </div>
    </form>
  );
}
