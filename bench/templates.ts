// Issue 10 point 1: a viewer posting '{{' x 100000 to flows/validate blocked the event loop for
// 12 s (a lazy regex, quadratic on `{{` without `}}`). Measures the template check on that input
// against a baseline of the same run: the same length of ordinary text with one template, and the
// old regex on a smaller input for reference.
import { checkTemplates } from '../src/workflows/template.js';

const N = 100_000;
const time = (f: () => void, runs = 5) => {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) { const t0 = performance.now(); f(); xs.push(performance.now() - t0); }
  return xs.sort((a, b) => a - b)[Math.floor(runs / 2)];
};

const hostile = { message: '{{'.repeat(N) };
const ordinary = { message: `${'ab'.repeat(N - 8)} {{ inputs.day }}` };
const base = time(() => checkTemplates(ordinary));
const scan = time(() => checkTemplates(hostile));
// The regex this replaced, on a tenth of the input (the whole would take seconds).
const OLD = /\{\{([\s\S]+?)\}\}/g;
const old = time(() => { [...hostile.message.slice(0, N / 5).matchAll(OLD)]; }, 1);

console.log(`template check, ${2 * N} characters, median of 5`);
console.log(`ordinary text with one template (baseline)  ${base.toFixed(2).padStart(9)} ms`);
console.log(`'{{' x ${N}                               ${scan.toFixed(2).padStart(9)} ms`);
console.log(`ratio hostile : baseline                    ${(scan / Math.max(base, 0.01)).toFixed(2)}  (aim <= 5)`);
console.log(`old lazy regex on '{{' x ${N / 10} (reference) ${old.toFixed(0).padStart(7)} ms`);
