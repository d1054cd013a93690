// The rows of a result in a grid of fixed height: the header row stays in view while the rows
// scroll, numbers are right-aligned in tabular figures, and only the rows in view (and a few
// around them) are in the page, so a result of thousands of rows is as light as one of twenty
// (100 rows made a 7,400 px page before). Rows have one fixed height (`ROW_PX`, app CSS
// `.grid-row`); spacer rows stand for the rest, and aria-rowcount / aria-rowindex tell screen
// readers where they are.
import { useState } from 'preact/hooks';
import { cell } from './queries';

const ROW_PX = 32;
const VIEW_PX = 448;
const OVERSCAN = 8;
const NUMERIC = /^(u?(tiny|small|big|huge)?int(eger)?\d*|double|float\d*|real|decimal|numeric)\b/i;

export const isNumeric = (type: string): boolean => NUMERIC.test(type.trim());

export function ResultGrid({ caption, columns, rows }: { caption: string; columns: Array<{ name: string; type: string }>; rows: unknown[][] }) {
  const [top, setTop] = useState(0);
  const first = Math.max(0, Math.floor(top / ROW_PX) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((top + VIEW_PX) / ROW_PX) + OVERSCAN);
  const numeric = columns.map((c) => isNumeric(c.type));
  return (
    <div class="grid-wrap" tabIndex={0} role="region" aria-label={caption} onScroll={(e) => setTop(e.currentTarget.scrollTop)}>
      <table id="result-table" class="result-grid" aria-rowcount={rows.length + 1}>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr aria-rowindex={1}>
            <th scope="col" class="rownum"><span class="visually-hidden">Row</span>#</th>
            {columns.map((c, j) => <th scope="col" key={j} class={numeric[j] ? 'num' : undefined} title={c.type}>{c.name}</th>)}
          </tr>
        </thead>
        <tbody>
          {first > 0 ? <tr class="spacer" aria-hidden="true"><td colSpan={columns.length + 1} style={{ height: `${first * ROW_PX}px` }} /></tr> : null}
          {rows.slice(first, last).map((row, k) => {
            const i = first + k;
            return (
              <tr key={i} class="grid-row" aria-rowindex={i + 2}>
                <th scope="row" class="rownum">{i + 1}</th>
                {row.map((v, j) => <td key={j} class={`${numeric[j] ? 'num' : ''}${v === null ? ' null' : ''}`}>{cell(v)}</td>)}
              </tr>
            );
          })}
          {last < rows.length ? <tr class="spacer" aria-hidden="true"><td colSpan={columns.length + 1} style={{ height: `${(rows.length - last) * ROW_PX}px` }} /></tr> : null}
        </tbody>
      </table>
    </div>
  );
}
