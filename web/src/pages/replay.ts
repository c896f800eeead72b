import { ApiError, get, post } from '../api';
import { conditionRow, executionControls, readRow } from '../builder';
import { chartWidth, COLORS, draw, numberTicks, timeAxis, timeSeries, uPlot } from '../chart';
import { type Ctx, denied } from '../ctx';
import { clear, field, fig, h, labelCells, select, td, tdTime, th } from '../dom';
import { int, num, pct, pnl, shares, time, usd } from '../format';
import { type Condition, formatCode, parseCode, type Rules } from '../strategy';

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
  trades: Trade[];
  pnl_curve: EquityPoint[];
  total_snapshots: number;
}

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
  ['total_fees', 'Fees', (x) => usd(x, 3)],
  ['final_market_outcome', 'Outcome', String],
];

export async function replayPage(ctx: Ctx): Promise<void> {
  if (!ctx.session.plan.replay) {
    clear(ctx.el, h('h1', null, 'Strategy replay'), denied(ctx, 'Strategy replay', 'PRO, PRO_TRIAL or ENTERPRISE'));
    ctx.ready();
    return;
  }
  const market = h('input', { type: 'text', testid: 'replay-market', list: 'replay-markets', required: true, value: ctx.params.get('market') ?? '', size: 34 });
  const options = h('datalist', { id: 'replay-markets' });
  const side = select('replay-side', [['UP', 'UP'], ['DOWN', 'DOWN']], 'UP');
  const size = h('input', { type: 'number', min: '1', max: '10000', step: 'any', value: '100', testid: 'replay-size' });
  const maxloss = h('input', { type: 'number', min: '1', max: '100', step: 'any', value: '50', testid: 'replay-maxloss' });
  const order = select('replay-order-type', [['MARKET', 'MARKET'], ['LIMIT', 'LIMIT']], 'MARKET');
  const exec = executionControls('replay');
  const entries = h('div', { class: 'conds' });
  const exits = h('div', { class: 'conds' });
  const code = h('textarea', { testid: 'replay-code', rows: '3', spellcheck: 'false', class: 'code' });
  const codeMsg = h('p', { class: 'muted', role: 'status' });
  const submit = h('button', { type: 'submit', testid: 'replay-submit' }, 'Run replay');
  const results = h('section', { class: 'results', 'aria-live': 'polite', testid: 'replay-results' });

  const addRow = (box: HTMLElement, testid: string, c: Condition) => {
    const row = conditionRow(testid, c, sync, () => {
      row.remove();
      sync();
    });
    box.append(row);
  };
  const rules = (): Rules => ({
    side: side.value,
    entryConditions: [...entries.children].map(readRow),
    exitConditions: [...exits.children].map(readRow),
    positionSize: Number(size.value),
    maxLossPercent: Number(maxloss.value),
    orderType: order.value,
  });
  function sync(): void {
    code.value = formatCode(rules());
    codeMsg.textContent = '';
  }
  const load = (r: Rules) => {
    side.value = r.side;
    entries.replaceChildren();
    exits.replaceChildren();
    r.entryConditions.forEach((c) => addRow(entries, 'replay-entry', c));
    r.exitConditions.forEach((c) => addRow(exits, 'replay-exit', c));
    size.value = String(r.positionSize);
    maxloss.value = String(r.maxLossPercent ?? 50);
    order.value = r.orderType ?? 'MARKET';
    sync();
  };
  code.addEventListener('change', () => {
    try {
      load(parseCode(code.value));
      codeMsg.textContent = 'The builder now shows this code.';
    } catch (e) {
      codeMsg.textContent = `Not a strategy code: ${(e as Error).message}`;
    }
  });
  const addEntry = h('button', { type: 'button', testid: 'replay-add-entry' }, '+ Entry condition');
  const addExit = h('button', { type: 'button', testid: 'replay-add-exit' }, '+ Exit condition');
  addEntry.addEventListener('click', () => {
    addRow(entries, 'replay-entry', { field: 'price_up', operator: '<', value: 0.5 });
    sync();
  });
  addExit.addEventListener('click', () => {
    addRow(exits, 'replay-exit', { field: 'price_up', operator: '>=', value: 0.6 });
    sync();
  });
  for (const x of [side, size, maxloss, order]) x.addEventListener('input', sync);

  const form = h(
    'form',
    { class: 'builder', 'aria-label': 'Strategy builder' },
    h('div', { class: 'row' }, field('Market (slug of a resolved market)', market), options, field('Side', side)),
    h('fieldset', null, h('legend', null, 'Enter when all of these hold'), entries, addEntry),
    h('fieldset', null, h('legend', null, 'Exit when any of these holds'), exits, addExit),
    h('div', { class: 'row' }, field('Shares per trade', size), field('Max loss %', maxloss), field('Order type', order)),
    exec.el,
    field('strategy_code (edit it, or paste one from the agent, to fill the builder)', code),
    codeMsg,
    submit,
  );
  let runs = 0;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    ctx.clearError();
    clear(results);
    submit.disabled = true;
    submit.textContent = 'Running…';
    try {
      const r = rules();
      const body = { marketSlug: market.value.trim(), ...r, ...exec.read() };
      const res = await post<{ data: ReplayResult }>('/v1/replay', body);
      showResult(results, res.data);
      results.setAttribute('data-run', String(++runs)); // tests wait for their own run
    } catch (e) {
      clear(results);
      ctx.error(e);
    } finally {
      submit.disabled = false;
      submit.textContent = 'Run replay';
    }
  });

  clear(ctx.el, h('h1', null, 'Strategy replay'), form, results);
  load({
    side: 'UP',
    entryConditions: [{ field: 'price_up', operator: '<', value: 0.45 }],
    exitConditions: [{ field: 'price_up', operator: '>=', value: 0.6 }, { field: 'time_remaining_pct', operator: '<=', value: 5 }],
    positionSize: 100,
    maxLossPercent: 50,
    orderType: 'MARKET',
  });
  ctx.ready();
  try {
    const r = await get<{ markets: { slug: string }[] }>('/v1/markets?coin=BTC&resolved=true&limit=50');
    options.append(...r.markets.map((m) => h('option', { value: m.slug })));
    if (!market.value && r.markets[0]) market.value = r.markets[0].slug;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
  }
}

export function showResult(box: HTMLElement, d: ReplayResult): void {
  const p = d.performance;
  const show = (k: string, f: Fmt) => {
    const v = p[k];
    if (k === 'win_rate' && p.total_trades === 0) return '—'; // no trade, no rate
    return typeof v === 'number' ? f(v) : (v ?? '—');
  };
  const chart = h('div', { class: 'chart', testid: 'equity-chart', role: 'img', 'aria-label': 'Equity over the market, with in-position spans and trades' });
  const rows = d.trades.map((t) =>
    h(
      'tr',
      { testid: 'trade-row', class: t.type === 'ENTRY' ? 'entry' : 'exit' },
      td(t.type),
      td(t.reason),
      tdTime(time(t.time, true)),
      td(num(t.price, 3), true),
      td(num(t.fill_price, 3), true),
      td(shares(t.shares), true),
      td(num(t.slippage, 3), true),
      td(usd(t.fee ?? 0, 3), true),
      td(pnl(t.position_pnl), true),
      td(pnl(t.cumulative_pnl), true),
    ),
  );
  const table = h(
    'table',
    { class: 'data cards', testid: 'trades-table' },
    h('caption', null, `${int(d.trades.length)} trade events`),
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
        th('Fee', true),
        th('Position pnl', true),
        th('Cumulative pnl', true),
      ),
    ),
    h('tbody', null, rows),
  );
  labelCells(table);
  clear(
    box,
    h('h2', null, `Result on ${d.market.slug}`),
    h(
      'dl',
      { class: 'figures' },
      FIGURES.filter(([k]) => k in p).map(([k, label, f]) => fig(label, show(k, f), k === 'total_pnl' ? 'replay-total-pnl' : k === 'total_trades' ? 'replay-total-trades' : undefined)),
      fig('Snapshots', int(d.total_snapshots)),
    ),
    chart,
    table,
  );
  equityChart(chart, d);
}

function equityChart(el: HTMLElement, d: ReplayResult): void {
  const pts = d.pnl_curve;
  if (pts.length === 0) {
    el.textContent = 'No equity points.';
    return;
  }
  const xs = pts.map((p) => Date.parse(p.time) / 1000);
  const equity = pts.map((p) => p.pnl + p.unrealized_pnl);
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
    [xs, equity, pts.map((p) => p.pnl), marks],
  );
}
