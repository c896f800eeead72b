import { ApiError, get, post } from '../api';
import { DEFAULT_RULES, inSeconds, strategyBuilder, unloadedCodeError } from '../builder';
import { loadDraft, saveDraft } from '../drafts';
import { parseCode, type Rules } from '../strategy';
import { chartWidth, COLORS, draw, numberTicks, timeAxis, timeSeries, uPlot } from '../chart';
import { type Ctx, denied } from '../ctx';
import { clear, field, fig, h, holdFocus, labelCells, markInvalid, td, tdTime, th, unmarkInvalid } from '../dom';
import { columnDecimals, customFees, fee, feeFormula, int, marketPriceDecimals, type Ticks, num, pct, plural, pnl, price, shares, time, usd } from '../format';

interface Trade {
  type: string;
  reason: string;
  time: string;
  price: number;
  fill_price: number;
  shares: number;
  slippage: number;
  position_pnl: number;
  cumulative_pnl: number;
  coin_price: number;
  fee?: number;
  liquidity?: string;
  maker_rebate?: number;
}

interface OrderEvent {
  time: string;
  action: string;
  side: string;
  price: number;
  shares: number;
  reason: string;
}

interface EquityPoint {
  time: string;
  pnl: number;
  unrealized_pnl: number;
  price: number;
  coin_price: number;
  in_position: boolean;
}

export interface ReplayResult {
  market: { slug: string; winner: string | null };
  performance: Record<string, number | string | null>;
  strategy?: { includeRebates?: boolean; orderType?: string; feeModel?: string; feeRate?: number; feeExponent?: number; feeType?: string };
  trades: Trade[];
  orders?: OrderEvent[] | null;
  pnl_curve: EquityPoint[];
  total_snapshots: number;
  warnings?: string[] | null;
  trades_truncated?: boolean;
  /** orders lists the first 1,000 order actions only; the counters count them all. */
  orders_truncated?: boolean;
}

/** What an order event's reason means (DESIGN 6, resting orders). */
export const ORDER_REASONS: Record<string, string> = {
  SIGNAL: 'the strategy’s conditions decided it',
  TRADE: 'recorded trades at its price reached it past the queue ahead of it',
  CROSS: 'the book crossed its price',
  TAKER: 'it took the book at once (it would have crossed when it landed, or there was no book to rest on)',
  POST_ONLY: 'post only: it would have taken the book at once, so it was rejected',
  CANCEL_AFTER: 'the cancel-after time passed before it filled',
  MAX_LOSS: 'the max loss was hit: the resting exit was cancelled and a MARKET exit followed',
  NO_FILL: 'it could fill nothing (an all-or-none exit the book could not take whole)',
  MARKET_END: 'the market ended with it still resting',
};

/** Trade events per page when paging through a long replay (tradesLimit). */
const TRADES_PAGE = 500;

type Fmt = (x: number) => string;
const FIGURES: [string, string, Fmt][] = [
  ['total_pnl', 'Total pnl', (x) => pnl(x)],
  ['total_pnl_percent', 'Total pnl %', (x) => pct(x, 2)],
  ['total_trades', 'Trades', int],
  ['win_rate', 'Win rate', (x) => pct(x)],
  ['max_drawdown', 'Max drawdown', (x) => usd(x)],
  ['avg_trade_pnl', 'Average trade', (x) => pnl(x)],
  ['best_trade', 'Best trade', (x) => pnl(x)],
  ['worst_trade', 'Worst trade', (x) => pnl(x)],
  ['time_in_position_pct', 'Time in position', (x) => pct(x)],
  ['total_fees', 'Total fees', (x) => fee(x)],
  ['final_market_outcome', 'Outcome', String],
];

/**
 * The fees a replay charged, from its strategy echo: none, a custom
 * schedule, or the market's, named by its curve (a crypto_fees market's fee
 * is the schedule's times p once more).
 */
export function feesCharged(s: ReplayResult['strategy']): string {
  switch (s?.feeModel ?? 'NONE') {
    case 'NONE':
      return 'none';
    case 'CUSTOM':
      return customFees(s?.feeRate, s?.feeExponent);
    case 'MARKET': {
      if (!s?.feeRate) return "the market's: it has no fee recorded, so none";
      return `the market's${s.feeType ? ` (${s.feeType})` : ''}: ${feeFormula(s.feeRate, s.feeExponent, s.feeType)}`;
    }
    default:
      return String(s?.feeModel);
  }
}

/** The figures of trades, which a replay without one does not have. */
const NO_TRADE_NO_FIGURE = ['win_rate', 'avg_trade_pnl', 'best_trade', 'worst_trade'];

/**
 * The decimals of a market's prices (its tick's: 2 at 0.01, 3 at 0.001),
 * fetched once a market; 3 where the market cannot be read (3 hides no
 * tick's digit). A replay's answer names no tick: its trades' prices were
 * written with 3 decimals on every market, 0.500 on a cent market.
 */
const decimalsOf = new Map<string, Promise<number>>();
function marketDecimals(slug: string): Promise<number> {
  let d = decimalsOf.get(slug);
  if (!d) {
    d = get<Ticks>(`/v1/markets/${encodeURIComponent(slug)}`).then(
      (m) => marketPriceDecimals(m),
      () => {
        decimalsOf.delete(slug); // asked again next time
        return 3;
      },
    );
    decimalsOf.set(slug, d);
  }
  return d;
}

/** The replay's errors of its market, which name no request field. */
const MARKET_CODES = ['MARKET_NOT_FOUND', 'MARKET_NOT_RESOLVED', 'NO_DATA'];

export async function replayPage(ctx: Ctx): Promise<void> {
  if (!ctx.session.plan.replay) {
    clear(ctx.el, h('h1', null, 'Strategy replay'), denied(ctx, 'Strategy replay', 'PRO, PRO_TRIAL or ENTERPRISE'));
    ctx.ready();
    return;
  }
  // The strategy being built outlives a visit to another page (a market's
  // "Replay a strategy on this market" link brings its market to it).
  const customer = ctx.session.customer_id;
  const draft = loadDraft<{ market?: string; rules?: Rules }>(customer, 'replay');
  const market = h('input', { type: 'text', testid: 'replay-market', list: 'replay-markets', required: true, value: ctx.params.get('market') ?? draft?.market ?? '', size: 34 });
  const options = h('datalist', { id: 'replay-markets' });
  let shown = false; // the draft (or the default) is in the builder: changes from here on are the user's
  const keep = () => {
    if (shown) saveDraft(customer, 'replay', { market: market.value, rules: b.rules() });
  };
  const b = strategyBuilder('replay', keep);
  market.addEventListener('input', keep);
  const submit = h('button', { type: 'submit', testid: 'replay-submit' }, 'Run replay');
  const results = h('section', { class: 'results', 'aria-live': 'polite', testid: 'replay-results' });

  const form = h(
    'form',
    // novalidate: the API judges every value and its message is shown.
    { class: 'builder', 'aria-label': 'Strategy builder', novalidate: true },
    h('div', { class: 'row' }, field('Market (slug of a resolved market)', market), options, field('Side', b.side)),
    b.entries,
    b.exits,
    b.sizes,
    b.exec,
    b.code,
    // The button first, the code's status line beside it (below on a
    // phone): whatever that line says, the button stays where it is.
    h('div', { class: 'run-row' }, submit, b.codeStatus),
  );
  let runs = 0;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    ctx.clearError();
    unmarkInvalid(form);
    // A code the builder could not take: nothing runs, where the builder's
    // earlier strategy ran under it, its result read as the code's.
    const unloaded = b.unloadedCode();
    if (unloaded) {
      ctx.error(unloadedCodeError(unloaded));
      markInvalid(b.code.querySelector('textarea') as HTMLElement);
      return;
    }
    clear(results);
    const back = holdFocus(submit);
    submit.disabled = true;
    submit.textContent = 'Running…';
    try {
      const r = b.rules();
      const body = { marketSlug: market.value.trim(), ...r };
      const [res, pd] = await Promise.all([post<{ data: ReplayResult }>('/v1/replay', body), marketDecimals(body.marketSlug)]);
      showResult(
        results,
        res.data,
        async (offset) => {
          const page = await post<{ data: ReplayResult }>('/v1/replay', { ...body, tradesOffset: offset, tradesLimit: TRADES_PAGE });
          return page.data;
        },
        pd,
      );
      results.setAttribute('data-run', String(++runs)); // tests wait for their own run
    } catch (e) {
      clear(results);
      ctx.error(inSeconds(e));
      // The control of the field the API named is marked and takes the
      // keyboard, as on the sweeps page: its message names the request's
      // field (positionSize), the form its own words (Shares per trade).
      // An error of the market itself (none such, not resolved, no
      // snapshots) names no field: it is the market box's all the same.
      const f = e instanceof ApiError ? (e.details?.field ?? (MARKET_CODES.includes(e.code) ? 'marketSlug' : undefined)) : undefined;
      const c = typeof f === 'string' ? (f === 'marketSlug' ? market : b.controlOf(f)) : null;
      if (c) markInvalid(c);
    } finally {
      submit.disabled = false;
      submit.textContent = 'Run replay';
      back();
    }
  });

  // A code from the agent names the coin and market type it was made for
  // (coin=ETH type=1hr); a replay takes them from its market, so the
  // builder leaves them out. When the market box holds a market of another
  // coin or type, the line under the code says so, rather than the code's
  // words going without a trace.
  const codeBox = b.code.querySelector('textarea') as HTMLTextAreaElement;
  let codeFor: { coin?: string; marketType?: string } = {};
  codeBox.addEventListener('input', () => {
    try {
      const r = parseCode(codeBox.value);
      codeFor = { coin: r.coin, marketType: r.marketType };
    } catch {
      codeFor = {};
    }
  });
  codeBox.addEventListener('change', () => {
    const { coin, marketType } = codeFor;
    codeFor = {};
    const [mCoin, , mType] = market.value.trim().toLowerCase().split('-');
    if (!mCoin) return; // no market yet: the one picked is the user's to choose
    const other = (coin && coin.toLowerCase() !== mCoin) || (marketType && marketType !== mType);
    if (!other || b.codeStatus.className.includes('warning')) return;
    b.codeStatus.textContent = `The builder now shows this code. It was made for ${[coin, marketType].filter(Boolean).join(' ')} markets; the market above is ${market.value.trim()}: pick one of those to replay it as made.`;
    b.codeStatus.className = 'code-status warning';
  });
  clear(ctx.el, h('h1', null, 'Strategy replay'), form, results);
  try {
    b.load(draft?.rules ?? DEFAULT_RULES);
  } catch {
    b.load(DEFAULT_RULES); // a draft of another version of the page
  }
  shown = true;
  ctx.ready();
  // Suggestions: the newest resolved markets of every coin (a coin the
  // plan does not serve is left out), BTC's first, the field's default.
  const lists = await Promise.all(
    ['BTC', 'ETH', 'SOL'].map(async (coin) => {
      try {
        return (await get<{ markets: { slug: string }[] }>(`/v1/markets?coin=${coin}&resolved=true&limit=20`)).markets;
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        return [];
      }
    }),
  );
  const slugs = lists.flat().map((m) => m.slug);
  options.append(...slugs.map((slug) => h('option', { value: slug })));
  if (!market.value && slugs[0]) market.value = slugs[0];
}

/**
 * Shows a replay's answer. page, when given, fetches the trade events from
 * an offset on (the same replay with tradesOffset and tradesLimit), for
 * an answer that lists some of them only (trades_truncated). pd is the
 * decimals of the market's prices (marketPriceDecimals).
 */
export function showResult(box: HTMLElement, d: ReplayResult, page?: (offset: number) => Promise<ReplayResult>, pd = 3): void {
  const p = d.performance;
  const show = (k: string, f: Fmt) => {
    const v = p[k];
    // No trade, no rate and no trade to be best, worst or average (the
    // API answers them 0, which reads as a trade that broke even).
    if (NO_TRADE_NO_FIGURE.includes(k) && p.total_trades === 0) return '—';
    // The fall in dollars and over the peak it fell from (max_drawdown_percent).
    if (k === 'max_drawdown' && typeof v === 'number' && typeof p.max_drawdown_percent === 'number') return `${f(v)} (${pct(p.max_drawdown_percent)})`;
    return typeof v === 'number' ? f(v) : (v ?? '—');
  };
  const figureIds: Record<string, string> = { total_pnl: 'replay-total-pnl', total_trades: 'replay-total-trades', total_fees: 'replay-total-fees', max_drawdown: 'replay-max-drawdown' };
  const chart = h('div', { class: 'chart', testid: 'equity-chart', role: 'img', 'aria-label': 'Equity over the market, with in-position spans and trades' });
  const inPnl = Boolean(d.strategy?.includeRebates);
  const rebates =
    typeof p.total_maker_rebates === 'number'
      ? fig('Est. maker rebates', `${fee(p.total_maker_rebates)} (${inPnl ? 'in pnl' : 'not in pnl'})`, 'replay-total-rebates')
      : null;
  const warnings = (d.warnings ?? []).length
    ? h('div', { class: 'warning', role: 'note', testid: 'replay-warnings' }, (d.warnings ?? []).map((w) => h('p', null, w)))
    : null;
  const tradesBox = h('div', { testid: 'trades-box' });
  showTrades(tradesBox, d, pd, page);
  clear(
    box,
    h('h2', null, `Result on ${d.market.slug}`),
    warnings,
    h(
      'dl',
      { class: 'figures' },
      FIGURES.filter(([k]) => k in p).map(([k, label, f]) => fig(label, show(k, f), figureIds[k])),
      rebates,
      fig('Snapshots', int(d.total_snapshots)),
      fig('Fees charged', feesCharged(d.strategy), 'replay-fee-schedule', 'wide'),
    ),
    chart,
    ordersSection(d, pd),
    tradesBox,
  );
  equityChart(chart, d);
}

const COUNTERS: [string, string][] = [
  ['orders_placed', 'Placed'],
  ['orders_filled', 'Filled'],
  ['orders_rejected', 'Rejected'],
  ['orders_cancelled', 'Cancelled'],
  ['orders_expired', 'Expired'],
];

/** The orders list: every order event with its reason explained, and the counters. */
function ordersSection(d: ReplayResult, pd: number): HTMLElement | null {
  const orders = d.orders ?? [];
  const p = d.performance;
  if (orders.length === 0 && !('orders_placed' in p)) return null;
  const reason = (r: string) => h('abbr', { title: ORDER_REASONS[r] ?? r, tabindex: '0' }, r);
  const od = columnDecimals(orders.map((o) => o.price), pd);
  const rows = orders.map((o) =>
    h(
      'tr',
      { testid: 'order-row', 'data-action': o.action },
      tdTime(time(o.time, true)),
      td(o.action),
      td(o.side),
      td(price(o.price, od), true),
      td(shares(o.shares), true),
      h('td', null, reason(o.reason)),
    ),
  );
  const table = h(
    'table',
    { class: 'data cards', testid: 'orders-table' },
    h(
      'caption',
      { testid: 'orders-caption' },
      d.orders_truncated ? `The first ${plural(orders.length, 'order event')} only: the counters above count every one` : plural(orders.length, 'order event'),
    ),
    h('thead', null, h('tr', null, th('Time (UTC)'), th('Action'), th('Side'), th('Price', true), th('Shares', true), th('Reason'))),
    h('tbody', null, rows),
  );
  labelCells(table);
  const used = new Set(orders.map((o) => o.reason));
  return h(
    'section',
    { 'aria-label': 'Orders' },
    h('h3', null, 'Orders'),
    h(
      'dl',
      { class: 'figures', testid: 'orders-counters' },
      COUNTERS.map(([k, label]) => fig(label, typeof p[k] === 'number' ? int(p[k] as number) : '—', `orders-${k.slice(7)}`)),
    ),
    orders.length ? table : h('p', { class: 'muted' }, 'No orders.'),
    used.size
      ? h(
          'details',
          { testid: 'order-reasons' },
          h('summary', null, 'What the reasons mean'),
          h(
            'dl',
            { class: 'reasons' },
            Object.entries(ORDER_REASONS)
              .filter(([r]) => used.has(r))
              .map(([r, text]) => [h('dt', null, r), h('dd', null, text)]),
          ),
        )
      : null,
  );
}

/** The trades table, with the note and pager of an answer that lists some trade events only. */
function showTrades(box: HTMLElement, d: ReplayResult, pd: number, page?: (offset: number) => Promise<ReplayResult>, offset?: number): void {
  const total = typeof d.performance.trade_events === 'number' ? (d.performance.trade_events as number) : d.trades.length;
  let note: HTMLElement | null = null;
  if (d.trades_truncated) {
    const text =
      offset === undefined
        ? `Showing the first and last ${int(d.trades.length / 2)} of ${int(total)} trade events.`
        : `Showing trade events ${int(offset + 1)} to ${int(offset + d.trades.length)} of ${int(total)}.`;
    const go = (label: string, at: number, testid: string) => {
      const b = h('button', { type: 'button', testid }, label);
      b.addEventListener('click', async () => {
        if (!page) return;
        // The page drawn anew keeps the keyboard on this button's
        // successor, or on the other one where this one is gone.
        const back = holdFocus(b, () => box.querySelector<HTMLElement>(`[data-testid=${testid}]`) ?? box.querySelector<HTMLElement>('[data-testid=trades-truncated] button'));
        b.disabled = true;
        b.textContent = 'Loading…';
        try {
          const next = await page(at);
          showTrades(box, { ...d, trades: next.trades, trades_truncated: true, performance: { ...d.performance, trade_events: total } }, pd, page, at);
        } catch (e) {
          b.disabled = false;
          b.textContent = label;
          box.prepend(h('p', { class: 'warning', role: 'alert' }, (e as Error).message));
        }
        back();
      });
      return b;
    };
    const at = offset ?? -TRADES_PAGE;
    note = h(
      'div',
      { class: 'plan-note', testid: 'trades-truncated', role: 'note' },
      h('p', null, text),
      page
        ? h(
            'div',
            { class: 'row' },
            at > 0 ? go(`Previous ${int(TRADES_PAGE)}`, Math.max(0, at - TRADES_PAGE), 'trades-prev') : null,
            at + TRADES_PAGE < total ? go(offset === undefined ? `Events 1 to ${int(TRADES_PAGE)}` : `Next ${int(TRADES_PAGE)}`, at + TRADES_PAGE, 'trades-next') : null,
          )
        : null,
    );
  }
  // Prices at the market's tick (0.45 at a cent, 0.455 at a tenth); a
  // fill that walked several levels is their average, off that grid, and
  // its column (and the slippage's) takes the decimals it needs, up to 4.
  // A column keeps one number of decimals.
  const priceD = columnDecimals(d.trades.map((t) => t.price), pd);
  const fillD = columnDecimals(d.trades.map((t) => t.fill_price), pd);
  const slipD = columnDecimals(d.trades.map((t) => t.slippage), pd);
  const rows = d.trades.map((t) =>
    h(
      'tr',
      { testid: 'trade-row', class: t.type === 'ENTRY' ? 'entry' : 'exit' },
      td(t.type),
      td(t.reason),
      tdTime(time(t.time, true)),
      td(price(t.price, priceD), true),
      td(price(t.fill_price, fillD), true),
      td(shares(t.shares), true),
      td(num(t.slippage, slipD), true),
      h('td', { testid: 'trade-liquidity' }, t.liquidity ?? '—'),
      td(fee(t.fee ?? 0), true),
      td(fee(t.maker_rebate ?? 0), true),
      td(pnl(t.position_pnl), true),
      td(pnl(t.cumulative_pnl), true),
    ),
  );
  const table = h(
    'table',
    { class: 'data cards', testid: 'trades-table' },
    h('caption', null, plural(d.trades.length, 'trade event')),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        th('Type'),
        th('Reason'),
        th('Time (UTC)'),
        th('Price', true),
        th('Fill', true),
        th('Shares', true),
        th('Slippage', true),
        h('th', { scope: 'col', title: 'TAKER took the book (pays the fee); MAKER rested on it and was filled (no fee, a rebate)' }, 'Liquidity'),
        th('Fee', true),
        th('Rebate', true),
        th('Position pnl', true),
        th('Cumulative pnl', true),
      ),
    ),
    h('tbody', null, rows.length ? rows : h('tr', null, h('td', { colspan: 12, class: 'muted' }, 'No trade events: the strategy never entered this market.'))),
  );
  labelCells(table);
  clear(box, note, h('div', { class: 'table-box' }, table)); // 12 columns: wider than a tablet, it scrolls in its box
}

function equityChart(el: HTMLElement, d: ReplayResult): void {
  const pts = d.pnl_curve;
  if (pts.length === 0) {
    el.textContent = 'No equity points.';
    return;
  }
  const xs = pts.map((p) => Date.parse(p.time) / 1000);
  // An equity point's pnl is realized plus unrealized already (DESIGN 6):
  // the realized part is what is left without the open position's.
  const equity = pts.map((p) => p.pnl);
  const realized = pts.map((p) => p.pnl - p.unrealized_pnl);
  // Trade markers: each event at the equity point of its time.
  const marks: (number | null)[] = xs.map(() => null);
  for (const t of d.trades) {
    const x = Date.parse(t.time) / 1000;
    let i = xs.findIndex((v) => v >= x);
    if (i < 0) i = xs.length - 1;
    marks[i] = equity[i];
  }
  const inPos = pts.map((p) => p.in_position);
  const shade: uPlot.Plugin = {
    hooks: {
      drawClear: [
        (u: uPlot) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.fillStyle = 'rgba(111,66,193,0.10)';
          let start = -1;
          for (let i = 0; i <= inPos.length; i++) {
            if (i < inPos.length && inPos[i]) {
              if (start < 0) start = i;
            } else if (start >= 0) {
              const x0 = u.valToPos(xs[start], 'x', true);
              const x1 = u.valToPos(xs[Math.min(i, xs.length - 1)], 'x', true);
              ctx.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), u.bbox.height);
              start = -1;
            }
          }
          ctx.restore();
        },
      ],
    },
  };
  draw(
    el,
    {
      width: chartWidth(el.parentElement ?? el),
      height: 300,
      plugins: [shade],
      scales: { x: { time: true } },
      axes: [timeAxis(), { label: 'pnl ($)', size: 60, values: numberTicks() }],
      series: [
        timeSeries(),
        { label: 'pnl (realized + unrealized)', stroke: COLORS.equity, width: 1.5, value: (_u, v) => pnl(v) },
        { label: 'realized', stroke: COLORS.muted, width: 1, value: (_u, v) => pnl(v) },
        { label: 'trades', stroke: '#000', width: 0, points: { show: true, size: 8, fill: '#fff', stroke: '#000' }, value: (_u, v) => pnl(v) },
      ],
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    },
    [xs, equity, realized, marks],
  );
}
