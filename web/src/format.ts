// Every figure and time the dashboard shows goes through here, so that a
// column has one number of decimals, thousands are separated, units are
// written, and times have one form: 24-hour UTC, "2026-11-27 10:20:00"
// (with ".123" milliseconds in trade tables, where trades share a second).

const DASH = '—';
const MINUS = '−'; // U+2212: the same width as "+" in tabular figures

const formats = new Map<number, Intl.NumberFormat>();
function nf(decimals: number): Intl.NumberFormat {
  let f = formats.get(decimals);
  if (!f) {
    f = new Intl.NumberFormat('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals, useGrouping: true });
    formats.set(decimals, f);
  }
  return f;
}

const bad = (x: unknown): x is null | undefined => x === null || x === undefined || typeof x !== 'number' || !Number.isFinite(x);

/** x with a fixed number of decimals and thousands separators: 76,132.68. */
export function num(x: number | null | undefined, decimals = 2): string {
  if (bad(x)) return DASH;
  const s = nf(decimals).format(Math.abs(x));
  return isZero(s) || x >= 0 ? s : MINUS + s;
}

/** A whole count: 50,000. */
export function int(x: number | null | undefined): string {
  return num(x, 0);
}

/** A count and its noun, singular for one: "1 trial", "16 trials", "1 market matches". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${int(n)} ${n === 1 ? one : many}`;
}

/** Money in dollars: $76,132.68, −$1.20. */
export function usd(x: number | null | undefined, decimals = 2): string {
  if (bad(x)) return DASH;
  const s = nf(decimals).format(Math.abs(x));
  return isZero(s) || x >= 0 ? `$${s}` : `${MINUS}$${s}`;
}

/**
 * A fee (or a maker rebate, a share of one) in dollars, to the 5 decimals
 * Polymarket rounds fees to: $0.01750. Every page writes fees so, where the
 * replay wrote 5 decimals and the agent and the sweeps 3.
 */
export function fee(x: number | null | undefined): string {
  return usd(x, 5);
}

/** A gain or loss in dollars, always signed: +$1.20, −$0.35, $0.00. */
export function pnl(x: number | null | undefined, decimals = 2): string {
  if (bad(x)) return DASH;
  const s = nf(decimals).format(Math.abs(x));
  if (isZero(s)) return `$${s}`;
  return `${x > 0 ? '+' : MINUS}$${s}`;
}

/** A percentage given in percent (55.5 → "55.5%"). */
export function pct(x: number | null | undefined, decimals = 1): string {
  if (bad(x)) return DASH;
  return `${num(x, decimals)}%`;
}

/** A share price of a market token, 0 to 1 ("0.45"); 3 decimals where the tick is finer than a cent. */
export function price(x: number | null | undefined, decimals = 2): string {
  return num(x, decimals);
}

/** The decimals of a market's token prices, from its tick size. */
export function priceDecimals(tick: number | null | undefined): number {
  return typeof tick === 'number' && tick > 0 && tick < 0.01 ? 3 : 2;
}

/** A market's tick sizes as the API answers them: the latest, and the changes seen while recording. */
export interface Ticks {
  tick_size?: number | null;
  tick_size_changes?: { tick_size?: number | null }[] | null;
}

/**
 * The decimals of a market's token prices over its whole life: 3 where any
 * tick in force was finer than a cent (a 0.01 market that moved to 0.001
 * near its end), else 2. Every page writes a market's prices so.
 */
export function marketPriceDecimals(m: Ticks | null | undefined): number {
  const ticks = [m?.tick_size, ...(m?.tick_size_changes ?? []).map((c) => c.tick_size)].filter((x): x is number => typeof x === 'number' && x > 0);
  return priceDecimals(ticks.length ? Math.min(...ticks) : undefined);
}

/**
 * The decimals of a column of prices: the market's (decimals), or more,
 * up to most, where a value is not on that grid (a fill averaged over
 * several levels of the book, 0.579792 at a cent tick, reads 0.5798, not
 * 0.58), so that one column keeps one number of decimals.
 */
export function columnDecimals(values: (number | null | undefined)[], decimals: number, most = Math.max(4, decimals)): number {
  let d = decimals;
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    while (d < most && Math.abs(v * 10 ** d - Math.round(v * 10 ** d)) > 1e-6) d++;
  }
  return d;
}

/**
 * The decimals that write every multiple of an axis's tick step as it is:
 * 0 for 5 or 10, 1 for 2.5, 2 for 0.25 or 0.05, 3 for 0.025 (at most 6).
 */
export function stepDecimals(step: number | null | undefined): number {
  if (typeof step !== 'number' || !Number.isFinite(step) || step <= 0) return 0;
  for (let d = 0; d < 6; d++) {
    const x = step * 10 ** d;
    if (Math.abs(x - Math.round(x)) < 1e-6 * Math.max(1, x)) return d;
  }
  return 6;
}

/**
 * A numeric axis's tick labels (uPlot's splits at its step incr), each
 * with the decimals the step needs, so that ticks 2.5 apart read 0.0, 2.5,
 * 5.0, 7.5 (not 0, 3, 5, 8) and 0.25 apart read 0.25, 0.50, 0.75.
 */
export function tickLabels(splits: (number | null | undefined)[], incr: number, prefix = ''): string[] {
  const d = stepDecimals(incr);
  return splits.map((v) => (v === null || v === undefined ? '' : prefix + num(v, d)));
}

/** Shares (sizes): 2 decimals. */
export function shares(x: number | null | undefined): string {
  return num(x, 2);
}

/**
 * A taker fee schedule as the fee of one fill at price p: "shares × 0.07 ×
 * p(1−p)". The curve crypto_fees (Polymarket's first crypto fees, early
 * 2026) multiplies it by p once more: "shares × 0.25 × p × (p(1−p))²".
 */
export function feeFormula(rate: number, exponent: number | null | undefined, type?: string | null): string {
  const e = typeof exponent === 'number' && exponent >= 0 ? exponent : 1;
  const sup: Record<number, string> = { 0: '⁰', 2: '²', 3: '³', 4: '⁴' };
  const curve = e === 1 ? 'p(1−p)' : `(p(1−p))${sup[e] ?? `^${e}`}`;
  return `shares × ${String(Number(rate.toPrecision(6)))} × ${type === 'crypto_fees' ? 'p × ' : ''}${curve}`;
}

/**
 * A strategy's custom fee schedule, in the words every page uses (the
 * replay's and the agent's "Fees charged"): "custom: shares × 0.02 ×
 * (p(1−p))²". The agent wrote "custom: rate 0.02, exponent 2" for what the
 * replay wrote as the formula.
 */
export function customFees(rate: number | null | undefined, exponent: number | null | undefined): string {
  return `custom: ${feeFormula(rate ?? 0, exponent)}`;
}

/** "164 of 50,000", or "164 (unlimited)" when there is no limit. */
export function ofLimit(used: number | null | undefined, limit: number | null | undefined): string {
  if (limit === null || limit === undefined) return `${int(used)} (unlimited)`;
  return `${int(used)} of ${int(limit)}`;
}

/** A limit, or "unlimited". */
export function limit(x: number | null | undefined): string {
  return x === null || x === undefined ? 'unlimited' : int(x);
}

function isZero(s: string): boolean {
  return !/[1-9]/.test(s);
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

function toDate(t: string | number | Date | null | undefined): Date | null {
  if (t === null || t === undefined || t === '') return null;
  const d = t instanceof Date ? t : new Date(t);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** "2026-11-27" (UTC). */
export function date(t: string | number | Date | null | undefined): string {
  const d = toDate(t);
  if (!d) return DASH;
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

/** "10:20:00" (UTC, 24-hour), or "10:20:00.123" with ms. */
export function clock(t: string | number | Date | null | undefined, ms = false): string {
  const d = toDate(t);
  if (!d) return DASH;
  const s = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return ms ? `${s}.${pad(d.getUTCMilliseconds(), 3)}` : s;
}

/** "2026-11-27 10:20:00" (UTC; the label or heading says so), or with ".123" when ms. */
export function time(t: string | number | Date | null | undefined, ms = false): string {
  const d = toDate(t);
  if (!d) return DASH;
  return `${date(d)} ${clock(d, ms)}`;
}

/**
 * A time axis for uPlot in the tables' form: 24-hour UTC ticks ("10:05",
 * or "10:05:30" when ticks are under a minute apart), the date under the
 * first tick and wherever the day changes. Values are epoch seconds.
 */
export function timeAxisValues(_u: unknown, splits: number[], _axis?: number, _space?: number, incr?: number): string[] {
  const step = incr ?? (splits.length > 1 ? splits[1] - splits[0] : 60);
  let lastDay = '';
  return splits.map((s) => {
    if (s === null || s === undefined) return '';
    const d = new Date(s * 1000);
    const c = clock(d);
    const hm = step < 60 ? c : c.slice(0, 5);
    const day = date(d);
    const label = day !== lastDay ? `${hm}\n${day}` : hm;
    lastDay = day;
    return label;
  });
}

/** The legend's value of a time (epoch seconds). */
export function timeLegend(_u: unknown, v: number | null): string {
  return v === null || v === undefined ? DASH : time(v * 1000);
}
