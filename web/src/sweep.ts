// Sweeps (DESIGN 14): the answers' shapes, and what the Sweeps page works
// out from them: the size of a sweep, the heatmap's grid, and the plain
// words under each statistic and error. Nothing here touches the page, so
// cmd/updown/browser_sweeps_test.go runs it in node on hand-made answers.

export type Interval = [number, number];
export type Value = number | string | boolean;

/** The aggregate statistics of one trial on a set of markets (jobs/stats.Summary). */
export interface Summary {
  n_markets: number;
  n_markets_traded: number;
  n_trades: number;
  total_pnl: number;
  total_fees: number;
  win_rate: number | null;
  ev_per_trade: number | null;
  ev_ci95: Interval | null;
  sqn: number | null;
  win_rate_ci95: Interval | null;
  pnl_per_market: { mean: number; sd: number | null; p5: number; p50: number; p95: number } | null;
  sharpe_per_market: number | null;
  daily: { date: string; markets: number; pnl: number }[] | null;
  sharpe_daily_ann: number | null;
  sortino_daily_ann: number | null;
  portfolio_max_drawdown: number | null;
  calibration: { from: number; to: number; entries: number; mean_price: number | null; side_won: number | null; side_won_ci95: Interval | null }[] | null;
  brier_entry: number | null;
  brier_market: number | null;
  psr0: number | null;
}

export interface ParameterValue {
  path: string;
  value: Value;
}

export interface TrialResult {
  trial: number;
  parameters: ParameterValue[];
  train: Summary;
  test: Summary | null;
  train_objective: number | null;
  test_objective: number | null;
}

export interface Best {
  trial: number;
  parameters: ParameterValue[];
  train_objective: number | null;
  test_objective: number | null;
  test: Summary | null;
  /** trial: under WALK_FORWARD, a test market's: the trial its fold chose (absent where it chose none). */
  per_market: { slug: string; pnl: number; test: boolean; embargo?: boolean; error?: string; trial?: number | null }[];
}

export interface Results {
  objective: string;
  split: string;
  trials: TrialResult[];
  best: Best | null;
  folds?: { fold: number; trial: number | null; train_objective: number | null; test: Summary; test_objective: number | null }[];
  stability: { trial: number; objective: number | null; neighbour_mean: number | null; neighbours: number } | null;
  dsr: number | null;
  pbo: number | null;
  /** How many of the 70 splits gave a verdict (see pboWords): pbo's denominator (absent from older sweeps: 70). */
  pbo_choices?: number | null;
}

export interface Parameter {
  path: string;
  values?: Value[];
  range?: { from: number; to: number; step: number };
}

export interface SweepRequest {
  strategy: Record<string, unknown>;
  parameters: Parameter[];
  search: { kind: string; trials?: number; seed?: number };
  markets: { coin: string; market_type: string; count: number; start_time?: string; end_time?: string };
  split: { kind: string; testFraction?: number; embargoMarkets?: number; folds?: number };
  objective: string;
}

export interface Sweep {
  sweep_id: string;
  status: string;
  trials: number;
  markets: number;
  replays: number;
  progress: { replays_done: number; replays_total: number; eta_seconds: number | null };
  created_at: string;
  finished_at: string | null;
  error: string | null;
  request?: SweepRequest;
  results?: Results;
}

export const ACTIVE = ['QUEUED', 'RUNNING'];
export const OBJECTIVES: [string, string][] = [
  ['total_pnl', 'total pnl'],
  ['ev_per_trade', 'EV per trade'],
  ['sharpe_per_market', 'Sharpe per market'],
  ['sqn', 'SQN'],
];

/**
 * A parameter's values typed in a box: numbers, words (MARKET, UP, price_up)
 * or true/false, separated by commas or spaces.
 */
export function parseValues(text: string): Value[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((w) => (w === 'true' ? true : w === 'false' ? false : w.trim() !== '' && Number.isFinite(Number(w)) ? Number(w) : w));
}

/** How many values from, from+step, … up to to (inclusive) holds; 0 when it is not a range. */
export function rangeCount(from: number, to: number, step: number): number {
  if (![from, to, step].every(Number.isFinite) || step <= 0 || to < from) return 0;
  return Math.floor((to - from) / step + 1e-9) + 1;
}

/** How many trials a sweep runs: every combination for GRID, at most trials of them for RANDOM. */
export function trialCount(params: Parameter[], search: { kind: string; trials?: number }): number {
  let n = params.length ? 1 : 0;
  for (const p of params) n *= p.range ? rangeCount(p.range.from, p.range.to, p.range.step) : new Set((p.values ?? []).map(String)).size;
  return search.kind === 'RANDOM' ? Math.min(n, Math.max(0, search.trials ?? 0)) : n;
}

export interface Cell {
  x: Value;
  y: Value;
  /** The objective, null where undefined (or no trial ran the pair). */
  value: number | null;
  /** The trial shown: the one with the highest objective among those with this pair. */
  trial: number | null;
  /** How many trials share the pair (more than 1 when other parameters vary too). */
  trials: number;
}

export interface Grid {
  xs: Value[];
  ys: Value[];
  /** rows[j][i] is the cell at ys[j], xs[i]. */
  rows: Cell[][];
  /** The largest |value| among the cells (the values shown), for the colour scale (0 when none). */
  maxAbs: number;
}

/** A parameter's values in order: numbers ascending, words as they first come. */
function axisValues(vs: Value[]): Value[] {
  const seen = new Map<string, Value>();
  for (const v of vs) if (!seen.has(String(v))) seen.set(String(v), v);
  const out = [...seen.values()];
  if (out.every((v) => typeof v === 'number')) out.sort((a, b) => (a as number) - (b as number));
  return out;
}

/**
 * The heatmap of key (train_objective or test_objective) over the
 * parameters at paths x and y (y may equal x for a one-parameter sweep: a
 * single row). Where other parameters vary too, a cell shows the trial best
 * on train among those that share its pair (the lowest trial on a tie), on
 * the test map as on the train map: a test cell that took the best test
 * figure of its pair would choose on the markets the map says no trial saw,
 * and show the luck of that choice as an out-of-sample result. A pair in
 * which no trial has a train objective shows its one trial, or nothing when
 * it has more (none was chosen). grid, the sweep's normalized parameters,
 * gives every value of each axis, tried or not.
 */
export function heatmap(trials: TrialResult[], x: string, y: string, key: 'train_objective' | 'test_objective', grid: Parameter[] = []): Grid {
  const valueAt = (t: TrialResult, path: string): Value | undefined => t.parameters.find((p) => p.path === path)?.value;
  // Every value of the grid (a RANDOM search leaves some pairs untried), then any a trial has beside them.
  const axis = (path: string) => axisValues([...(grid.find((p) => p.path === path)?.values ?? []), ...trials.map((t) => valueAt(t, path)).filter((v): v is Value => v !== undefined)]);
  const xs = axis(x);
  const ys = x === y ? [''] : axis(y);
  const xi = new Map(xs.map((v, i) => [String(v), i]));
  const yi = new Map(ys.map((v, j) => [String(v), j]));
  const rows: Cell[][] = ys.map((yv) => xs.map((xv) => ({ x: xv, y: yv, value: null, trial: null, trials: 0 })));
  // Each cell's trials, in trial order, and the one chosen on train.
  const members: TrialResult[][][] = ys.map(() => xs.map(() => []));
  for (const t of trials) {
    const i = xi.get(String(valueAt(t, x)));
    const j = x === y ? 0 : yi.get(String(valueAt(t, y)));
    if (i === undefined || j === undefined) continue;
    rows[j][i].trials++;
    members[j][i].push(t);
  }
  // The colour scale is the map's own: over the values its cells show, not
  // over every trial (a trial its pair did not choose would set a scale no
  // cell reaches, and wash the map out).
  let maxAbs = 0;
  rows.forEach((row, j) =>
    row.forEach((c, i) => {
      const ts = members[j][i];
      let chosen: TrialResult | null = ts.length === 1 ? ts[0] : null;
      let best: number | null = null;
      for (const t of ts) {
        const v = t.train_objective;
        if (v !== null && v !== undefined && (best === null || v > best)) {
          best = v;
          chosen = t;
        }
      }
      const v = chosen ? chosen[key] : null;
      if (chosen && v !== null && v !== undefined) {
        c.value = v;
        c.trial = chosen.trial;
        maxAbs = Math.max(maxAbs, Math.abs(v));
      }
    }),
  );
  return { xs, ys, rows, maxAbs };
}

/** A cell's colour: green for gains, red for losses, stronger with |value| on the map's scale; grey without a value. */
export function cellColor(value: number | null, maxAbs: number): string {
  if (value === null) return '#eaeef2';
  const a = maxAbs > 0 ? 0.12 + 0.78 * Math.min(1, Math.abs(value) / maxAbs) : 0.12;
  const rgb = value > 0 ? '26,127,55' : value < 0 ? '207,34,46' : '140,149,159';
  return `rgba(${rgb},${a.toFixed(2)})`;
}

/** A cell's text colour: white on a strong colour, else the page's. */
export function cellInk(value: number | null, maxAbs: number): string {
  return value !== null && maxAbs > 0 && Math.abs(value) / maxAbs > 0.55 ? '#fff' : '#1f2328';
}

const tries = (n: number) => `${n.toLocaleString('en-US')} random ${n === 1 ? 'try' : 'tries'}`;

/** A probability as a chance: "a 40% chance", "less than a 1% chance", "more than a 99% chance". */
export function chance(p: number): string {
  if (p < 0.005) return 'less than a 1% chance';
  if (p > 0.995) return 'more than a 99% chance';
  return `a ${Math.round(p * 100)}% chance`;
}

/**
 * Below this many traded train markets a DSR is not called evidence: the PSR under it takes the
 * Sharpe ratio's estimate as normal, which a handful of markets is far from (two markets have no
 * kurtosis to speak of, and their ratio's error is as large as the ratio).
 */
export const FEW_MARKETS = 30;

/**
 * What a DSR says, in a line: the chance the best trial's Sharpe is more than the luck of n trials.
 * markets is the best trial's traded train markets, the sample the DSR is computed from.
 */
export function dsrWords(dsr: number | null, trials: number, markets?: number): string {
  if (dsr === null) return 'No DSR: it needs at least 2 trials and 2 train markets with trades, and a best trial whose pnl varies from market to market (without a spread it has no Sharpe ratio).';
  const c = chance(dsr);
  const claim = `${c} that the best trial's per-market Sharpe beats what the best of ${tries(trials)} would show`;
  if (markets !== undefined && markets < FEW_MARKETS && dsr >= 0.5) {
    const n = `${markets.toLocaleString('en-US')} ${markets === 1 ? 'market' : 'markets'}`;
    return `Too few markets to tell: ${claim}, but from only ${n} with trades, where the formula is far surer than the data; ${FEW_MARKETS} or more would tell.`;
  }
  if (dsr >= 0.95) return `Strong: ${claim}, so its edge is very likely more than the luck of the search.`;
  if (dsr >= 0.5) return `Weak: ${claim}. Better than a coin toss, not yet evidence; more markets would tell.`;
  const lead = c.startsWith('a ') ? `Only ${claim}` : claim.charAt(0).toUpperCase() + claim.slice(1);
  return `${lead}: the best result is most likely the luck of trying ${trials.toLocaleString('en-US')} settings.`;
}

/**
 * What a PBO says, in a line: PBO is the share of CSCV's splits in which the best trial on one half
 * fell to the bottom half on the other, or made no trade there where another trial had an objective, of the
 * `choices` splits (70 but those in which no trial had an objective on the first half, or none but the
 * best on the other, or every trial scored the same on the other: only trials with an objective are
 * chosen or ranked, so a setting that never trades neither counts as beaten nor makes the best look
 * good, and identical settings are not overfit for tying).
 */
export function pboWords(pbo: number | null, choices?: number | null): string {
  if (pbo === null) return 'No PBO: it needs at least 16 train markets and a way of halving them in which the best trial on one half can be compared on the other with another trial that has an objective there (a setting that never trades has none, and is not ranked), and not every trial scores the same there (identical settings cannot be told apart).';
  const n = choices ?? 70;
  const k = Math.round(pbo * n);
  const none = n < 70 ? ` (the other ${70 - n} were left out: no trial had an objective on one half, or none but the best on the other, or every trial scored the same there)` : '';
  const share = `In ${k === 0 ? 'none' : k === n ? 'all' : `${k}`} of the ${n} ways of halving the train markets${none}, the trial best on one half ranked in the bottom half on the other, or made no trade there where another trial had an objective`;
  if (pbo <= 0.1) return `${share}: the best setting holds up from half to half, so the search is unlikely to be overfit.`;
  if (pbo < 0.5) return `${share}: some overfitting; the best setting does not always carry over.`;
  return `${share}: the best setting is no better than a coin toss out of sample, so the search is overfit.`;
}

/** The best trial's objective beside its grid neighbours'. */
export function stabilityWords(s: Results['stability'], fmt: (x: number) => string): string {
  if (!s || s.objective === null) return 'No best trial.';
  if (s.neighbour_mean === null || s.neighbours === 0) return 'The best trial has no neighbour in the grid to compare with.';
  const ratio = s.objective !== 0 ? s.neighbour_mean / s.objective : 0;
  const verdict =
    s.objective > 0 && ratio >= 0.5
      ? 'a plateau: nearby settings do almost as well, which an edge would show'
      : s.objective > 0
        ? 'a peak: nearby settings do much worse, which luck would show'
        : 'no setting here makes money';
  return `Its ${s.neighbours} neighbours (one step each way) average ${fmt(s.neighbour_mean)} against its ${fmt(s.objective)}: ${verdict}.`;
}

/** One line for each aggregate statistic: its label and what it means. */
export const STAT_WORDS: [keyof Summary | 'brier', string, string][] = [
  ['n_markets', 'Markets', 'Markets replayed.'],
  ['n_markets_traded', 'Markets traded', 'Markets with at least one trade.'],
  ['n_trades', 'Trades', 'Round trips: an entry and its exit.'],
  ['total_pnl', 'Total pnl', 'Every trade’s gain or loss added up, after fees.'],
  ['total_fees', 'Fees', 'Taker fees paid.'],
  ['win_rate', 'Win rate', 'The share of trades that made money; the range holds the true rate with 95% confidence (Wilson).'],
  ['ev_per_trade', 'EV per trade', 'What a trade makes on average; a 95% range that spans 0 means no edge can be told from none.'],
  ['sqn', 'SQN', '√trades × mean ÷ sd of trade pnl: how many standard errors the mean trade lies from 0; 2 or more is hard to get by luck.'],
  ['pnl_per_market', 'Pnl per market', 'Mean (sd) and the 5th, 50th and 95th percentiles over traded markets: a typical market and the bad and good tails.'],
  ['sharpe_per_market', 'Sharpe per market', 'Mean ÷ sd of a traded market’s pnl: the edge per unit of market-to-market swing.'],
  ['psr0', 'PSR', 'The chance the true per-market Sharpe is above 0, allowing for few markets and skewed pnl, not for the search.'],
  ['sharpe_daily_ann', 'Daily Sharpe, annualized', 'Mean ÷ sd of each UTC day’s pnl per share of position, × √365; none with fewer than 20 UTC days of markets.'],
  ['sortino_daily_ann', 'Daily Sortino, annualized', 'As the daily Sharpe, but only losing days count as risk; none with fewer than 20 UTC days of markets.'],
  ['portfolio_max_drawdown', 'Max drawdown', 'The largest fall of the running pnl, market after market in time order.'],
  ['brier', 'Brier: entries / market', 'Mean squared gap between the price and the outcome, 0 perfect: your entry prices beside the market’s own mid. Lower than the market’s is a better forecast.'],
];

export interface Problem {
  text: string;
  /** The body field the API named, when it named one. */
  field?: string;
  /** The plan does not allow it: show the upgrade link. */
  plan?: boolean;
}

/** An API error on POST /v1/sweeps in plain words. */
export function sweepProblem(status: number, code: string, message: string, details?: Record<string, unknown>): Problem {
  const end = (m: string) => (/[.!?]$/.test(m) ? '' : '.');
  const msg = message.charAt(0).toUpperCase() + message.slice(1) + end(message);
  if (status === 403 && code === 'TIER_ACCESS_DENIED') return { text: `Your plan does not allow this sweep. ${msg}`, plan: true };
  if (status === 429 && details?.limit === 'concurrent_sweeps') {
    const max = typeof details.max === 'number' ? details.max : 1;
    return {
      text: `You already have ${max === 1 ? 'a sweep' : `${max} sweeps`} running, as many as your plan runs at once. Wait until ${max === 1 ? 'it finishes' : 'one finishes'} (see Your sweeps below) or cancel ${max === 1 ? 'it' : 'one'}, then start this one.`,
    };
  }
  if (status === 429) {
    const wait = typeof details?.retry_after === 'number' ? ` Wait ${details.retry_after} s and try again.` : ' Wait a moment and try again.';
    return { text: `Too many requests.${wait}` };
  }
  // A validation message names its field already: the control is marked, the words kept.
  if (status === 400 && typeof details?.field === 'string') return { text: `Not accepted: ${message}${end(message)}`, field: details.field };
  if (status === 404 && code === 'NO_BACKTEST_MARKETS') return { text: `Nothing to sweep: ${msg} Try another market type, or fewer markets.`, field: 'markets.market_type' };
  return { text: msg };
}

/**
 * The best trial's markets won and lost (pnl above and below 0), train and
 * test: an embargo market is in neither set, so it is not counted.
 */
export function wonLost(perMarket: Best['per_market']): [number, number] {
  const counted = perMarket.filter((m) => !m.embargo);
  return [counted.filter((m) => m.pnl > 0).length, counted.filter((m) => m.pnl < 0).length];
}

/**
 * A normalized parameter as the form shows it: values evenly spaced (3 or
 * more numbers) become the range they came from, others stay values.
 */
export function asRange(p: Parameter): Parameter {
  const v = p.values ?? [];
  if (p.range || v.length < 3 || !v.every((x) => typeof x === 'number')) return p;
  const xs = v as number[];
  const step = Number((xs[1] - xs[0]).toFixed(10));
  if (!(step > 0) || xs.some((x, i) => Math.abs(x - (xs[0] + i * step)) > 1e-9 * Math.max(1, Math.abs(x)))) return p;
  return { path: p.path, range: { from: xs[0], to: xs[xs.length - 1], step } };
}
