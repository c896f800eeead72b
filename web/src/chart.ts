import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { tickLabels, timeAxisValues, timeLegend } from './format';

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
  // The axes' tick labels, drawn on the canvas, are also kept on the
  // element for tests and scripts to read: the x axis's (data-x-ticks) and
  // the first y axis's (data-y-ticks).
  const shown = (u: uPlot, i: number) => JSON.stringify(((u.axes[i] as any)?._values ?? []).filter((v: unknown) => v !== ''));
  const ticks = (u: uPlot) => {
    el.setAttribute('data-x-ticks', shown(u, 0));
    el.setAttribute('data-y-ticks', shown(u, 1));
  };
  const hooks = { ...opts.hooks, drawAxes: [...(opts.hooks?.drawAxes ?? []), ticks] };
  const u = new uPlot({ ...opts, hooks }, data, el);
  // The axes' titles (drawn on the canvas too), in the order of opts.axes.
  el.setAttribute('data-axis-labels', JSON.stringify((opts.axes ?? []).map((a) => a.label ?? '')));
  el.setAttribute('data-draw-ms', (performance.now() - t0).toFixed(1));
  el.setAttribute('data-points', String(data[0].length));
  followWidth(el, u);
  return u;
}

/**
 * Keeps a drawn chart as wide as its box when the window is resized (a
 * phone turned, a window narrowed): the box is measured with the chart out
 * of the way, whose own width would hold the box, and the page, at it.
 */
function followWidth(el: HTMLElement, u: uPlot): void {
  let pending = 0;
  const fit = () => {
    pending = 0;
    if (!u.root.isConnected) {
      window.removeEventListener('resize', onResize);
      return;
    }
    u.root.style.display = 'none';
    const w = chartWidth(el);
    u.root.style.display = '';
    if (Math.abs(w - u.width) >= 1) u.setSize({ width: w, height: u.height });
  };
  const onResize = () => {
    if (!pending) pending = requestAnimationFrame(fit);
  };
  window.addEventListener('resize', onResize);
}

/** The x axis of a time chart: 24-hour UTC, as in the tables. */
export function timeAxis(): uPlot.Axis {
  return { values: timeAxisValues as uPlot.Axis['values'], space: 56, size: 48 };
}

/** The x series of a time chart: its legend shows the time as the tables do. */
export function timeSeries(label = 'time (UTC)'): uPlot.Series {
  return { label, value: (u, v) => timeLegend(u, v) };
}

/** Axis tick labels with the decimals the tick step needs (a step of 2.5 writes 7.5, not 8). */
export function numberTicks(prefix = ''): uPlot.Axis['values'] {
  return (_u, splits, _ax, _space, incr) => tickLabels(splits, incr, prefix);
}

export const COLORS = { up: '#1a7f37', down: '#cf222e', coin: '#0969da', muted: '#8c959f', equity: '#6f42c1', spread: '#9a6700' };
