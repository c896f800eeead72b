import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export { uPlot };

/** Width for a chart in its container (readable from phone width up). */
export function chartWidth(el: HTMLElement): number {
  return Math.max(280, Math.min(1200, (el.clientWidth || el.parentElement?.clientWidth || 900) - 8));
}

/** Draws a chart and records how long it took on the element (data-draw-ms). */
export function draw(el: HTMLElement, opts: uPlot.Options, data: uPlot.AlignedData): uPlot {
  const t0 = performance.now();
  el.replaceChildren();
  const u = new uPlot(opts, data, el);
  el.setAttribute('data-draw-ms', (performance.now() - t0).toFixed(1));
  el.setAttribute('data-points', String(data[0].length));
  return u;
}

export const COLORS = { up: '#1a7f37', down: '#cf222e', coin: '#0969da', muted: '#8c959f', equity: '#6f42c1' };
