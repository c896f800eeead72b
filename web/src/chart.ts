import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { num, timeAxisValues, timeLegend } from './format';

export { uPlot };

/** Width for a chart in its container (readable from phone width up). */
export function chartWidth(el: HTMLElement): number {
  const w = el.clientWidth || el.parentElement?.clientWidth || 900;
  return Math.max(260, Math.min(1200, w - 8));
}

/** Draws a chart and records how long it took on the element (data-draw-ms). */
export function draw(el: HTMLElement, opts: uPlot.Options, data: uPlot.AlignedData): uPlot {
  const t0 = performance.now();
  el.replaceChildren();
  // The x axis's tick labels, drawn on the canvas, are also kept on the
  // element (data-x-ticks) for tests and scripts to read.
  const ticks = (u: uPlot) => el.setAttribute('data-x-ticks', JSON.stringify(((u.axes[0] as any)?._values ?? []).filter((v: unknown) => v !== '')));
  const hooks = { ...opts.hooks, drawAxes: [...(opts.hooks?.drawAxes ?? []), ticks] };
  const u = new uPlot({ ...opts, hooks }, data, el);
  el.setAttribute('data-draw-ms', (performance.now() - t0).toFixed(1));
  el.setAttribute('data-points', String(data[0].length));
  return u;
}

/** The x axis of a time chart: 24-hour UTC, as in the tables. */
export function timeAxis(): uPlot.Axis {
  return { values: timeAxisValues as uPlot.Axis['values'], space: 56, size: 48 };
}

/** The x series of a time chart: its legend shows the time as the tables do. */
export function timeSeries(label = 'time (UTC)'): uPlot.Series {
  return { label, value: (u, v) => timeLegend(u, v) };
}

/** Axis tick labels with a fixed number of decimals for the tick step. */
export function numberTicks(prefix = ''): uPlot.Axis['values'] {
  return (_u, splits, _ax, _space, incr) => {
    const d = incr >= 1 ? 0 : incr >= 0.1 ? 1 : incr >= 0.01 ? 2 : 3;
    return splits.map((v) => (v === null || v === undefined ? '' : prefix + num(v, d)));
  };
}

export const COLORS = { up: '#1a7f37', down: '#cf222e', coin: '#0969da', muted: '#8c959f', equity: '#6f42c1', spread: '#9a6700' };
