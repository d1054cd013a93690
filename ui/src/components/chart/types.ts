// What a chart shows, independent of how it is drawn (uPlot, in its own chunk: ChartCanvas.tsx).
export type ChartKind = 'line' | 'bar' | 'stacked' | 'scatter';

export interface ChartSeries {
  label: string;
  values: Array<number | null>;
  /** A palette entry of app.css (`--svc-chart-<color>`): success, danger, warning, muted, 1 .. 4. */
  color: string;
}

export interface ChartData {
  kind: ChartKind;
  /** X values: seconds since the epoch when `time`, else numbers (categories are 0 .. n-1 with `categories`). */
  x: number[];
  time?: boolean;
  categories?: string[];
  series: ChartSeries[];
  /** Horizontal lines (an alert's threshold). */
  lines?: Array<{ label: string; value: number; color: string }>;
  xLabel?: string;
  yLabel?: string;
}
