import { ApiError, get, post } from '../api';
import { executionControls, inSeconds, numberIn, type OrderRules } from '../builder';
import { loadDraft, saveDraft } from '../drafts';
import { parseCode, type Rules } from '../strategy';
import { chartWidth, COLORS, draw, numberTicks, uPlot } from '../chart';
import { type Ctx, denied, planHint } from '../ctx';
import { clear, fig, field, h, holdFocus, labelCells, markInvalid, select, setChoice, td, unmarkInvalid } from '../dom';
import { customFees, date, fee, int, num, pct, pnl, usd } from '../format';
import { typesFollowCoin } from './markets';

interface Quota {
  used: number;
  limit: number | null;
  remaining: number | null;
  resets_at: string;
}

interface MarketResult {
  slug: string;
  performance?: Record<string, number | string>;
  error?: { code: string; message: string };
}

interface Backtest {
  strategy_code: string;
  generated_strategy?: { feeModel?: string; feeRate?: number; feeExponent?: number; latencyMs?: number } & Pick<
    Rules,
    'orderType' | 'postOnly' | 'limitOffsetTicks' | 'cancelAfterMs' | 'queueModel' | 'includeRebates'
  >;
  aggregate: Record<string, unknown>;
  results: MarketResult[];
  /** Set when fewer markets were tested than marketCount asked for. */
  warning?: string | null;
}

const TYPES: [string, string][] = ['5m', '15m', '1hr', '4hr', '24hr'].map((t) => [t, t]);

export async function agentPage(ctx: Ctx): Promise<void> {
  if (!ctx.session.plan.backtest_ai) {
    clear(ctx.el, h('h1', null, 'Backtest AI agent'), denied(ctx, 'The Backtest AI agent', 'PRO or ENTERPRISE'));
    ctx.ready();
    return;
  }
  const prompt = h('textarea', { testid: 'agent-prompt', rows: '3', required: true }, 'buy UP when price_up drops below 0.45, exit above 0.6 or with 10% left');
  const preset = select('agent-preset', [['', 'none'], ['mean_reversion', 'mean reversion'], ['dip_buying', 'dip buying'], ['momentum_entry', 'momentum entry'], ['quick_scalp', 'quick scalp']], '');
  const coin = select('agent-coin', [['BTC', 'BTC'], ['ETH', 'ETH'], ['SOL', 'SOL']], 'BTC');
  const type = select('agent-type', TYPES, '15m');
  const followCoin = typesFollowCoin(coin, type);
  // An empty number box sends nothing, and the API's default runs: each
  // says which (the placeholder, or the hint under it).
  const count = h('input', { type: 'number', min: '1', max: '100', value: '10', placeholder: '10', testid: 'agent-count' });
  const size = h('input', { type: 'number', min: '1', max: '10000', step: 'any', value: '', placeholder: 'from the prompt', testid: 'agent-size' });
  const maxloss = h('input', { type: 'number', min: '1', max: '100', step: 'any', value: '', placeholder: 'from the prompt', testid: 'agent-maxloss' });
  // Order type (GTC with its resting-order options, as on the replay
  // page), re-entry, fees and latency: each from the prompt or code unless
  // set here, when it wins over them, for a generation and a backtest alike.
  const exec = executionControls('agent', undefined, true, true);
  const code = h('textarea', { testid: 'agent-code', rows: '3', spellcheck: 'false', class: 'code', placeholder: 'Generate a strategy, or paste a strategy_code' });
  const explanation = h('p', { class: 'muted', role: 'status' });
  const copy = h('button', { type: 'button', testid: 'agent-copy' }, 'Copy code');
  const generate = h('button', { type: 'button', testid: 'agent-generate' }, 'Generate (uses 1 of the quota)');
  const backtest = h('button', { type: 'button', testid: 'agent-backtest' }, 'Backtest this code');
  const quota = h('div', { testid: 'agent-quota', class: 'quota' });
  const results = h('section', { 'aria-live': 'polite', testid: 'agent-results' });
  let runs = 0;
  // What the form holds outlives a visit to another page: above all a
  // generated code, which cost one of the month's generations.
  const customer = ctx.session.customer_id;
  const boxes = { prompt, preset, coin, type, count, size, maxloss, code };
  // order: the order type of a draft kept before it moved into exec.
  type Draft = Partial<Record<keyof typeof boxes | 'order', string>> & { exec?: OrderRules; explanation?: string };
  const keep = () => {
    const d: Draft = { exec: exec.read(), explanation: explanation.textContent ?? '' };
    for (const [k, el] of Object.entries(boxes)) d[k as keyof typeof boxes] = el.value;
    saveDraft(customer, 'agent', d);
  };
  const draft = loadDraft<Draft>(customer, 'agent');
  if (draft) {
    for (const [k, el] of Object.entries(boxes)) {
      const v = draft[k as keyof typeof boxes];
      if (typeof v !== 'string') continue;
      if (el instanceof HTMLSelectElement) setChoice(el, v);
      else el.value = v;
    }
    try {
      if (draft.exec || draft.order) exec.write({ ...draft.exec, orderType: draft.exec?.orderType ?? (draft.order || undefined) });
    } catch {
      // a draft of another version of the page: its execution settings start afresh
    }
    explanation.textContent = draft.explanation ?? '';
    followCoin();
  }
  // Whether the quota leaves a generation: the generate button stays
  // disabled without one, whatever a click on it did.
  let canGenerate = true;

  const settings = () => {
    const s: Record<string, unknown> = { coin: coin.value, marketType: type.value, marketCount: numberIn(count) };
    return s;
  };
  const showQuota = (q: Quota) => {
    clear(
      quota,
      h('label', { for: 'agent-quota-meter' }, 'AI generations this month: '),
      q.limit === null
        ? h('span', null, `${int(q.used)} used (unlimited)`)
        : [h('meter', { id: 'agent-quota-meter', min: '0', max: String(q.limit), value: String(q.used) }), h('span', null, ` ${int(q.used)} of ${int(q.limit)} used, ${int(q.remaining)} left`)],
      h('small', null, ` — resets ${date(q.resets_at)}`),
      q.limit !== null && (q.remaining ?? 0) <= 0 ? planHint(ctx, 'No generations left this month on your plan; backtesting a code still works.') : null,
    );
    canGenerate = q.limit === null || (q.remaining ?? 0) > 0;
    generate.disabled = !canGenerate;
    quota.setAttribute('data-used', String(q.used));
  };
  // A code that names its coin and market type (as /generate writes it)
  // sets the boxes that the backtest sends, which would otherwise run it on
  // whatever they showed; they can be changed after, to run it elsewhere.
  const followCode = () => {
    let r: ReturnType<typeof parseCode>;
    try {
      r = parseCode(code.value);
    } catch {
      return;
    }
    if (r.coin) setChoice(coin, r.coin);
    followCoin();
    if (r.marketType) setChoice(type, r.marketType);
  };
  code.addEventListener('input', followCode);
  code.addEventListener('change', followCode);
  copy.addEventListener('click', async () => {
    if (!code.value.trim()) {
      explanation.textContent = 'Nothing to copy: generate a strategy, or paste a strategy_code, first.';
      code.focus();
      return;
    }
    try {
      await navigator.clipboard.writeText(code.value);
      explanation.textContent = 'Copied. Paste it into the replay page\'s strategy_code box.';
    } catch {
      code.select();
      explanation.textContent = 'Select-all done: copy with Ctrl+C.';
    }
  });
  // The button says what is under way: a generation or a backtest may be
  // followed for minutes after the server's wait (504 JOB_TIMEOUT).
  // The control of each request field an error may name (details.field).
  const controls: Record<string, HTMLElement> = {
    prompt,
    preset,
    coin,
    marketType: type,
    marketCount: count,
    positionSize: size,
    maxLossPercent: maxloss,
    strategy_code: code,
    ...exec.controls,
  };
  const busy = async (b: HTMLButtonElement, f: () => Promise<void>, doing: string) => {
    ctx.clearError();
    unmarkInvalid(ctx.el);
    const label = b.textContent;
    // The generate button ends disabled when this was the month's last
    // generation: its keyboard goes to the code box the generation filled.
    const back = holdFocus(b, () => code);
    b.disabled = true;
    b.textContent = doing;
    b.setAttribute('aria-busy', 'true');
    try {
      await f();
    } catch (e) {
      ctx.error(inSeconds(e));
      // The control of the field the API named is marked and takes the
      // keyboard, as on the replay and sweeps pages.
      const name = e instanceof ApiError ? e.details?.field : undefined;
      const c = typeof name === 'string' && Object.hasOwn(controls, name) ? controls[name] : undefined;
      if (c) markInvalid(c);
      // A quota spent elsewhere (another tab, the API): the meter says so.
      if (e instanceof ApiError && e.code === 'BACKTEST_AI_QUOTA_EXCEEDED') {
        await get<{ data: Quota }>('/v1/backtest-ai/quota').then((q) => showQuota(q.data)).catch(() => {});
      }
    } finally {
      b.textContent = label;
      b.removeAttribute('aria-busy');
      b.disabled = b === generate && !canGenerate;
      back();
    }
  };
  generate.addEventListener('click', () =>
    busy(generate, async () => {
      const body: Record<string, unknown> = { prompt: prompt.value, ...settings(), positionSize: numberIn(size), ...exec.read() };
      if (preset.value) body.preset = preset.value;
      if (maxloss.value) body.maxLossPercent = Number(maxloss.value);
      const r = await post<{ data: { strategy_code: string; generated_strategy: { explanation: string }; quota: Quota } }>('/v1/backtest-ai/generate', body);
      code.value = r.data.strategy_code;
      explanation.textContent = r.data.generated_strategy.explanation;
      keep();
      showQuota(r.data.quota);
    }, 'Generating…'),
  );
  backtest.addEventListener('click', () =>
    busy(backtest, async () => {
      clear(results);
      const r = await post<{ data: Backtest }>('/v1/backtest-ai/run', { strategy_code: code.value.trim(), ...settings(), ...exec.read() });
      showBacktest(results, r.data);
      results.setAttribute('data-run', String(++runs));
    }, 'Backtesting…'),
  );

  const form = h(
    'form',
    { class: 'builder', 'aria-label': 'Agent settings' },
    field('Describe the strategy in plain English', prompt),
    h('div', { class: 'row' }, field('Preset', preset), field('Coin', coin), field('Market type', type), field('Markets to test (1 to 100)', count, 'Empty: 10.')),
    h(
      'div',
      { class: 'row' },
      field('Shares per trade', size, 'Empty: as the prompt says, else 100.'),
      field('Max loss %', maxloss, 'Empty: as the prompt says, else 50.'),
    ),
    exec.el,
    h('div', { class: 'generate' }, generate, quota),
    field('strategy_code', code),
    explanation,
    h('p', null, copy, ' ', backtest),
  );
  form.addEventListener('input', keep);
  form.addEventListener('change', keep);
  clear(ctx.el, h('h1', null, 'Backtest AI agent'), form, results);
  try {
    showQuota((await get<{ data: Quota }>('/v1/backtest-ai/quota')).data);
  } catch (e) {
    ctx.error(e);
  }
  ctx.ready();
}

/** The fees a strategy ran with, in the replay page's words (customFees). */
function feeWords(s: Backtest['generated_strategy']): string {
  switch (s?.feeModel ?? 'NONE') {
    case 'MARKET':
      return "the market's fee schedule";
    case 'CUSTOM':
      return customFees(s?.feeRate, s?.feeExponent);
    case 'NONE':
      return 'none';
    default:
      return String(s?.feeModel);
  }
}

/** The orders a strategy ran with, in words: a resting order's options too. */
function orderWords(s: Backtest['generated_strategy']): string {
  const t = s?.orderType || 'MARKET';
  if (t !== 'GTC') return t;
  const opts = [
    s?.postOnly ? 'post only' : '',
    s?.limitOffsetTicks ? `offset ${int(s.limitOffsetTicks)} ${s.limitOffsetTicks === 1 ? 'tick' : 'ticks'}` : '',
    s?.cancelAfterMs ? `cancelled after ${num(s.cancelAfterMs / 1000, 3).replace(/\.?0+$/, '')} s` : '',
    `queue ${s?.queueModel || 'RISK_AVERSE'}`,
    s?.includeRebates ? 'rebates in pnl' : '',
  ].filter(Boolean);
  return `GTC, resting as a maker: ${opts.join(', ')}`;
}

/** A market's error as the API words it, with its code: "market … has no recorded snapshots to replay (NO_DATA)", where the table showed the code alone. */
function errorWords(e: { code: string; message: string } | undefined): string {
  if (!e) return '';
  return e.message ? `${e.message} (${e.code})` : e.code;
}

function showBacktest(box: HTMLElement, d: Backtest): void {
  const a = d.aggregate as Record<string, any>;
  // Each market's number, 1 the oldest (the answer lists the newest
  // first), in the table and on the chart alike: a market without data
  // keeps its number, and has no bar.
  const rows = d.results.map((r, i) => ({ n: d.results.length - i, slug: r.slug, pnl: Number(r.performance?.total_pnl ?? NaN), trades: Number(r.performance?.total_trades ?? NaN), win: Number(r.performance?.win_rate ?? NaN), err: errorWords(r.error) }));
  const tbody = h('tbody');
  let sortKey: keyof (typeof rows)[0] = 'slug';
  let asc = false;
  const render = () => {
    const sorted = [...rows].sort((x, y) => {
      const a = x[sortKey];
      const b = y[sortKey];
      const c = typeof a === 'number' && typeof b === 'number' ? (Number.isNaN(a) ? -Infinity : a) - (Number.isNaN(b) ? -Infinity : b) : String(a).localeCompare(String(b));
      return asc ? c : -c;
    });
    clear(
      tbody,
      sorted.map((r) =>
        h(
          'tr',
          { 'data-slug': r.slug },
          td(int(r.n), true),
          h('td', { class: 'slug' }, h('a', { href: `#/market/${encodeURIComponent(r.slug)}` }, r.slug)),
          td(pnl(r.pnl), true),
          td(int(r.trades), true),
          td(r.trades > 0 ? pct(r.win) : '—', true),
          td(r.err),
        ),
      ),
    );
    labelCells(table);
  };
  const header = (label: string, key: keyof (typeof rows)[0]) => {
    const b = h('button', { type: 'button', class: 'sort' }, label);
    const th = h('th', { scope: 'col', 'aria-sort': 'none', class: key === 'slug' || key === 'err' ? null : 'num' }, b);
    b.addEventListener('click', () => {
      asc = sortKey === key ? !asc : false;
      sortKey = key;
      th.parentElement?.querySelectorAll('th').forEach((x) => x.setAttribute('aria-sort', 'none'));
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      render();
    });
    return th;
  };
  const chart = h('div', { class: 'chart', testid: 'agent-pnl-chart', role: 'img', 'aria-label': 'Total pnl per market by its number in the table (1 = oldest): green bars won, red bars lost' });
  const market = (m: { slug: string; total_pnl: number } | null | undefined) =>
    m ? h('span', { class: 'market-fig' }, h('a', { href: `#/market/${encodeURIComponent(m.slug)}`, class: 'slug' }, m.slug), ' ', h('span', null, pnl(m.total_pnl))) : '—';
  const table = h(
    'table',
    { class: 'data cards', testid: 'agent-results-table' },
    h('caption', null, 'Per market (click a heading to sort)'),
    h('thead', null, h('tr', null, header('#', 'n'), header('Market', 'slug'), header('Total pnl', 'pnl'), header('Trades', 'trades'), header('Win rate', 'win'), header('Error', 'err'))),
    tbody,
  );
  clear(
    box,
    h('h2', null, 'Backtest'),
    // Fewer markets than asked for: the figures below are of a smaller sample.
    d.warning ? h('div', { class: 'warning', role: 'note', testid: 'agent-warning' }, h('p', null, d.warning)) : null,
    h(
      'dl',
      { class: 'figures' },
      fig('Total pnl', pnl(a.total_pnl), 'agent-total-pnl'),
      // A market that could not be replayed (NO_DATA) counts among those
      // tested but in no figure below: the average is over the others.
      fig('Markets tested', Number(a.markets_failed) > 0 ? `${int(a.markets_tested)} (${int(a.markets_failed)} failed)` : int(a.markets_tested), 'agent-markets-tested'),
      fig('Markets traded', int(a.markets_traded)),
      fig('Trades', int(a.total_trades), 'agent-total-trades'),
      // No trade, no rate: the answer's 0 beside 0 trades is shown as —, as a replay's is.
      fig('Win rate', Number(a.total_trades) > 0 ? pct(a.win_rate) : '—', 'agent-win-rate'),
      fig('Average per market', pnl(a.avg_market_pnl)),
      // max_drawdown is the largest one market's (DESIGN 8); the fall of
      // the markets' summed pnl, in end_time order, is the portfolio's.
      fig('Largest market drawdown', usd(a.max_drawdown), 'agent-max-drawdown'),
      'portfolio_max_drawdown' in a ? fig('Portfolio drawdown', usd(a.portfolio_max_drawdown), 'agent-portfolio-drawdown') : null,
      'total_fees' in a ? fig('Fees paid', fee(a.total_fees), 'agent-total-fees') : null,
      // What the backtest ran with (the settings' or else the code's), as the answer says.
      fig('Fees charged', feeWords(d.generated_strategy), 'agent-used-fees', 'wide'),
      fig('Latency', `${int(d.generated_strategy?.latencyMs ?? 0)} ms`, 'agent-used-latency'),
      fig('Orders', orderWords(d.generated_strategy), 'agent-used-orders', 'wide'),
      fig('Best market', market(a.best_market), undefined, 'wide'),
      fig('Worst market', market(a.worst_market), undefined, 'wide'),
    ),
    chart,
    table,
  );
  render();
  const all = [...rows].reverse(); // oldest market first: market 1 at x = 1
  if (rows.some((r) => !Number.isNaN(r.pnl))) {
    const n = all.length;
    const xs = all.map((r) => r.n);
    // The markets by number, for tests and scripts (the legend names one at a time).
    chart.setAttribute('data-slugs', JSON.stringify(all.map((r) => r.slug)));
    const bars = uPlot.paths.bars!({ size: [0.7, 48], align: 0 });
    draw(
      chart,
      {
        width: chartWidth(box),
        height: 240,
        // Half a market of room each side: the first and last bars fit whole.
        scales: { x: { time: false, range: [0.5, n + 0.5] }, y: { range: (_u, lo, hi) => [Math.min(0, lo) * 1.1, Math.max(0, hi) * 1.1 || 1] } },
        axes: [
          {
            label: 'market (1 = oldest)',
            incrs: [1, 2, 5, 10, 20, 25, 50, 100],
            values: (_u, vals) => vals.map((v) => (Number.isInteger(v) && v >= 1 && v <= n ? String(v) : '')),
          },
          { label: 'total pnl ($)', size: 64, values: numberTicks() },
        ],
        series: [
          { label: 'market', value: (_u, v) => (v === null ? '—' : `${v}: ${all[v - 1]?.slug ?? ''}${Number.isNaN(all[v - 1]?.pnl) ? ' (no result)' : ''}`) },
          { label: 'won', stroke: COLORS.up, fill: 'rgba(26,127,55,0.55)', paths: bars, points: { show: false }, value: (_u, v) => pnl(v) },
          { label: 'lost', stroke: COLORS.down, fill: 'rgba(207,34,46,0.55)', paths: bars, points: { show: false }, value: (_u, v) => pnl(v) },
        ],
      },
      // A market without a trade (pnl 0) is neither won nor lost: no bar.
      [xs, all.map((r) => (r.pnl > 0 ? r.pnl : null)), all.map((r) => (r.pnl < 0 ? r.pnl : null))],
    );
  }
}
