import { ApiError, call, get } from '../api';
import { chartWidth, COLORS, draw, numberTicks, timeAxis, timeSeries, uPlot } from '../chart';
import { type Ctx, planHint, upgradeLink } from '../ctx';
import { clear, field, fig, h, labelCells, select, td, tdTime, th } from '../dom';
import { feeFormula, int, marketPriceDecimals, num, pct, plural, shares, time, usd } from '../format';

export interface Market {
  slug: string;
  market_id: string;
  market_type: string;
  start_time: string;
  end_time: string;
  coin_price_start: number | null;
  coin_price_end: number | null;
  winner: string | null;
  final_volume: number | null;
  resolved_at: string | null;
  tick_size?: number;
  tick_size_changes?: { tick_size?: number }[];
  taker_fee_rate?: number | null;
  fee_exponent?: number | null;
  fee_type?: string | null;
  maker_rebate_rate?: number | null;
}

/** A market's taker fee schedule in words, named by its curve (fee_type), with the makers' rebate. */
export function marketFees(m: Market): string {
  if (typeof m.taker_fee_rate !== 'number') return 'not recorded';
  if (m.taker_fee_rate === 0) return 'none';
  const rebate = typeof m.maker_rebate_rate === 'number' && m.maker_rebate_rate > 0 ? `; ${pct(m.maker_rebate_rate * 100, 0)} of it goes to makers as a rebate` : '';
  return `${feeFormula(m.taker_fee_rate, m.fee_exponent, m.fee_type)}${m.fee_type ? ` (${m.fee_type})` : ''}${rebate}`;
}

const TYPES: Record<string, string[]> = { BTC: ['5m', '15m', '1hr', '4hr', '24hr'], ETH: ['5m', '15m', '1hr'], SOL: ['5m', '15m', '1hr'] };
const PAGE = 25;

/**
 * Keeps a market type box (of every type) to the types its coin box's coin
 * has (SPEC 2.1: 4hr and 24hr for BTC only): the others are disabled, and a
 * type the coin lacks becomes the coin's longest (BTC's 24hr, then ETH:
 * 1hr). It follows the coin as the user changes it; the answer is for a
 * coin set by the page itself (a saved form, a code, a sweep's request).
 */
export function typesFollowCoin(coin: HTMLSelectElement, type: HTMLSelectElement): () => void {
  const apply = () => {
    const has = TYPES[coin.value] ?? TYPES.BTC;
    for (const o of type.options) o.disabled = !has.includes(o.value);
    if (!has.includes(type.value)) type.value = has[has.length - 1];
  };
  coin.addEventListener('input', apply);
  coin.addEventListener('change', apply);
  apply();
  return apply;
}

export async function marketsPage(ctx: Ctx): Promise<void> {
  const p = ctx.params;
  const plan = ctx.session.plan;
  const coin = select('markets-coin', [['BTC', 'BTC'], ['ETH', 'ETH'], ['SOL', 'SOL']], p.get('coin') ?? 'BTC');
  // 4hr and 24hr markets exist for BTC only: a type the coin does not
  // have (24hr kept from BTC when the coin changed to ETH) is any type.
  const typesOf = (c: string) => TYPES[c] ?? TYPES.BTC;
  const wantType = p.get('type') ?? '';
  const type = select('markets-type', [['', 'any'], ...typesOf(coin.value).map((t): [string, string] => [t, t])], typesOf(coin.value).includes(wantType) ? wantType : '');
  const resolved = select('markets-resolved', [['', 'any'], ['true', 'resolved'], ['false', 'not resolved']], p.get('resolved') ?? ''); // active, or ended with no result yet
  const from = h('input', { type: 'datetime-local', testid: 'markets-from', value: p.get('from') ?? '' });
  const to = h('input', { type: 'datetime-local', testid: 'markets-to', value: p.get('to') ?? '' });
  // A hand-edited offset (-5, 2.5) is read as the whole one it can be (0,
  // 2): the API refuses it, and the page showed that refusal and no markets.
  // One past a safe whole number (1e19, 1e400, Infinity) is the first page.
  const asked = Math.max(0, Math.floor(Number(p.get('offset') ?? 0)));
  const offset = Number.isSafeInteger(asked) ? asked : 0;
  // The plan's limits, beside the controls they limit.
  const coinHint = plan.eth_sol_markets ? undefined : planHint(ctx, 'BTC only on your plan; ETH and SOL need PRO or above.');
  const fromHint = plan.window_days || !plan.eth_sol_markets ? planHint(ctx, `Your plan covers ${plan.markets_window}.`) : undefined;
  const filters = h(
    'form',
    { class: 'filters', 'aria-label': 'Market filters' },
    field('Coin', coin, coinHint),
    field('Market type', type),
    field('Status', resolved),
    field('Starting after (UTC)', from, fromHint),
    field('Starting before (UTC)', to),
  );
  const apply = (off = 0) => {
    const q = new URLSearchParams();
    q.set('coin', coin.value);
    if (type.value && typesOf(coin.value).includes(type.value)) q.set('type', type.value);
    if (resolved.value) q.set('resolved', resolved.value);
    if (from.value) q.set('from', from.value);
    if (to.value) q.set('to', to.value);
    if (off) q.set('offset', String(off));
    location.hash = `#/markets?${q}`;
  };
  filters.addEventListener('change', () => apply());
  filters.addEventListener('submit', (e) => {
    e.preventDefault();
    apply();
  });
  // The list's place says it is loading until the server answers.
  const tbody = h('tbody', null, h('tr', null, h('td', { colspan: 8, class: 'muted', role: 'status' }, 'Loading markets…')));
  const table = h(
    'table',
    { testid: 'markets-table', class: 'data cards' },
    h('caption', null, `${coin.value} markets, newest first (click a row to open it)`),
    h(
      'thead',
      null,
      h('tr', null, th('Market'), th('Type'), th('Start (UTC)'), th('End (UTC)'), th('Winner'), th('Coin start', true), th('Coin end', true), th('Volume', true)),
    ),
    tbody,
  );
  // When the plan's window hides older matches, it says so where they would be: under the table.
  const warning = h('p', { class: 'plan-limit', role: 'status', testid: 'markets-plan-limit' });
  const pager = h('div', { class: 'pager' });
  // A table wider than the window (8 columns at a tablet's 768 px) scrolls
  // in its own box, as the sweeps' trials do, where the whole page did.
  clear(ctx.el, h('h1', null, 'Markets'), filters, h('div', { class: 'table-box' }, table), pager, warning);

  const q = new URLSearchParams({ coin: coin.value, limit: String(PAGE), offset: String(offset) });
  if (type.value) q.set('market_type', type.value);
  if (resolved.value) q.set('resolved', resolved.value);
  if (from.value) q.set('start_time', new Date(from.value + 'Z').toISOString());
  if (to.value) q.set('end_time', new Date(to.value + 'Z').toISOString());
  try {
    const r = await get<{ markets: Market[]; total: number; warning: string | null }>(`/v1/markets?${q}`);
    tbody.replaceChildren();
    for (const m of r.markets) {
      const href = `#/market/${encodeURIComponent(m.slug)}`;
      const row = h(
        'tr',
        { testid: 'market-row', 'data-slug': m.slug, class: 'clickable' },
        h('td', { class: 'slug' }, h('a', { href }, m.slug)),
        td(m.market_type),
        tdTime(time(m.start_time)),
        tdTime(time(m.end_time)),
        // A market past its end whose result is not in yet is no longer
        // active: it waits for its result (it read "active" until resolved).
        h('td', { class: m.winner ? `winner ${m.winner.toLowerCase()}` : 'winner' }, m.winner ?? (Date.parse(m.end_time) <= Date.now() ? 'ended, no result yet' : 'active')),
        td(usd(m.coin_price_start), true),
        td(usd(m.coin_price_end), true),
        td(usd(m.final_volume), true),
      );
      // The whole row opens the market; the slug stays the link for the keyboard.
      row.addEventListener('click', (ev) => {
        if ((ev.target as HTMLElement).closest('a') || getSelection()?.toString()) return;
        location.hash = href;
      });
      tbody.append(row);
    }
    labelCells(table);
    // A page past the last (the address kept an offset while fewer markets
    // came to match: active ones resolved, a plan's window moved on) says
    // so and leads to the last page, instead of "no markets match".
    const lastPage = Math.max(0, Math.floor((r.total - 1) / PAGE) * PAGE);
    const past = r.markets.length === 0 && r.total > 0 && offset > 0;
    if (past) {
      const back = h('button', { type: 'button', class: 'link', testid: 'markets-last-page' }, 'Go to the last page');
      back.addEventListener('click', () => apply(lastPage));
      tbody.append(h('tr', null, h('td', { colspan: 8, testid: 'markets-past-end' }, `This page is past the last: ${plural(r.total, 'market matches', 'markets match')} these filters. `, back)));
    } else if (r.markets.length === 0) tbody.append(h('tr', null, h('td', { colspan: 8 }, 'No markets match these filters.')));
    // The API's warning ends "upgrade at /v1/account/billing", an address
    // for programs: here the link to the plans says it instead.
    if (r.warning) warning.append(`${r.warning.replace(/;\s*upgrade at \S+$/, '')}. `, upgradeLink(ctx));
    const prev = h('button', { type: 'button', testid: 'markets-prev', disabled: offset === 0 || past }, '← Newer');
    const next = h('button', { type: 'button', testid: 'markets-next', disabled: offset + PAGE >= r.total }, 'Older →');
    prev.addEventListener('click', () => apply(Math.max(0, offset - PAGE)));
    next.addEventListener('click', () => apply(offset + PAGE));
    const range = r.markets.length ? `${int(offset + 1)}–${int(offset + r.markets.length)} of ${int(r.total)}` : `0 of ${int(r.total)}`;
    pager.append(prev, h('span', { testid: 'markets-range' }, range), next);
  } catch (e) {
    tbody.replaceChildren();
    // A time filter the API refused (end_time before start_time) is said
    // in the boxes' words, in the table's place, with its box marked.
    const boxes: Record<string, [HTMLInputElement, string]> = { 'query.start_time': [from, 'Starting after (UTC)'], 'query.end_time': [to, 'Starting before (UTC)'] };
    const refused = e instanceof ApiError && e.code === 'VALIDATION_ERROR' && Array.isArray(e.details?.errors) ? (e.details.errors as { location?: string; message?: string }[]) : [];
    const timeError = refused.find((x) => typeof x.location === 'string' && Object.hasOwn(boxes, x.location));
    if (timeError) {
      const words = (m: string) => m.replace(/\bstart_time\b/g, `“${boxes['query.start_time'][1]}”`).replace(/\bend_time\b/g, `“${boxes['query.end_time'][1]}”`);
      // The alert is inside the cell, which keeps its role in the table;
      // the box marked invalid is described by it.
      const box = boxes[timeError.location as string][0];
      box.setAttribute('aria-invalid', 'true');
      box.setAttribute('aria-describedby', 'markets-filter-error');
      tbody.append(h('tr', null, h('td', { colspan: 8 }, h('p', { id: 'markets-filter-error', role: 'alert', testid: 'markets-filter-error' }, `${words(timeError.message ?? (e as Error).message)}.`))));
    } else if (e instanceof ApiError && e.code === 'TIER_ACCESS_DENIED') {
      // Said once, where the markets would be, with the upgrade link; not
      // again in the banner above.
      tbody.append(h('tr', null, h('td', { colspan: 8 }, h('span', { role: 'alert', testid: 'markets-denied' }, `${e.message}. `, upgradeLink(ctx)))));
    } else ctx.error(e);
  }
  ctx.ready();
}

interface Series {
  market: Market;
  snapshots: number;
  bucket_ms: number;
  time: number[];
  index: number[];
  price_up: { first: number[]; min: number[]; max: number[] };
  price_down: { first: number[]; min: number[]; max: number[] };
  coin_price: { first: number[]; min: number[]; max: number[] };
}

interface Level {
  price: number;
  size: number;
}

interface Snapshot {
  time: string;
  coin_price: number;
  price_up: number;
  price_down: number;
  orderbook_up?: { asks: Level[]; bids: Level[] };
  orderbook_down?: { asks: Level[]; bids: Level[] };
}

/** One token's book; before an instant is picked (book undefined) it asks for one. */
function bookTable(testid: string, title: string, decimals: number, book?: { asks: Level[]; bids: Level[] } | null, picked = false): HTMLElement {
  const asks = [...(book?.asks ?? [])].sort((a, b) => b.price - a.price);
  const bids = [...(book?.bids ?? [])].sort((a, b) => b.price - a.price);
  const row = (side: string, l: Level) => h('tr', { class: side, 'data-side': side }, td(side), td(num(l.price, decimals), true), td(shares(l.size), true));
  const empty = !picked ? 'Pick an instant on the chart or with the slider to see this book.' : 'No book recorded at this instant.';
  return h(
    'table',
    { testid, class: 'data book' },
    h('caption', null, title),
    h('thead', null, h('tr', null, th('Side'), th('Price', true), th('Size (shares)', true))),
    h('tbody', null, asks.map((l) => row('ask', l)), bids.map((l) => row('bid', l)), !asks.length && !bids.length ? h('tr', null, h('td', { colspan: 3, class: 'muted' }, empty)) : null),
  );
}

/** Shades each bucket's min to max of a series behind its line (spikes stay
 * visible), across its bucket (bucketS seconds) at most: never across a
 * stretch without snapshots after it. */
function bandPlugin(bands: { min: (number | null)[]; max: (number | null)[]; scale: string; fill: string }[], bucketS: number): uPlot.Plugin {
  return {
    hooks: {
      drawSeries: [
        (u: uPlot, si: number) => {
          if (si !== 1) return;
          const ctx = u.ctx;
          const xs = u.data[0];
          ctx.save();
          ctx.beginPath();
          ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
          ctx.clip();
          for (const b of bands) {
            ctx.fillStyle = b.fill;
            for (let i = 0; i < xs.length; i++) {
              const lo = b.min[i];
              const hi = b.max[i];
              if (lo === null || hi === null || hi - lo <= 0) continue;
              const x0 = u.valToPos(xs[i], 'x', true);
              const x1 = Math.min(i + 1 < xs.length ? u.valToPos(xs[i + 1], 'x', true) : x0 + 1, u.valToPos(xs[i] + bucketS, 'x', true));
              const y0 = u.valToPos(hi, b.scale, true);
              const y1 = u.valToPos(lo, b.scale, true);
              ctx.fillRect(x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0));
            }
          }
          ctx.restore();
        },
      ],
    },
  };
}

/** The way from a market to a replay on it: a link where the plan has
 * replay and the market has resolved (SPEC 4.2 replays resolved markets
 * only); otherwise what stands in the way. */
function replayLink(ctx: Ctx, m: Market): HTMLElement {
  if (!ctx.session.plan.replay) {
    return h('span', { testid: 'market-replay' }, 'Replaying a strategy on it needs PRO, PRO_TRIAL or ENTERPRISE: ', upgradeLink(ctx));
  }
  if (!m.resolved_at && !m.winner) {
    return h('span', { class: 'muted', testid: 'market-replay' }, `A strategy can be replayed on it once it resolves (it end${Date.parse(m.end_time) <= Date.now() ? 'ed' : 's'} ${time(m.end_time)} UTC).`);
  }
  return h('a', { href: `#/replay?market=${encodeURIComponent(m.slug)}`, testid: 'market-replay' }, 'Replay a strategy on this market');
}

export async function marketPage(ctx: Ctx): Promise<void> {
  const slug = ctx.path[1] ?? '';
  const chartBox = h(
    'div',
    { class: 'chart', testid: 'market-chart', role: 'img', 'aria-label': 'price_up, price_down and coin price over the market' },
    h('p', { class: 'muted' }, 'Loading the chart…'),
  );
  const books = h('div', { class: 'books' }, bookTable('market-book-up', 'UP book', 2), bookTable('market-book-down', 'DOWN book', 2));
  const instantInfo = h('p', { class: 'instant', role: 'status', testid: 'market-instant' }, 'Pick an instant: click the chart, or move the slider, to see both order books then.');
  const slider = h('input', { type: 'range', min: '0', max: '0', value: '0', testid: 'market-instant-slider' });
  const gaps = h('div', { testid: 'market-gaps', class: 'gaps' }, 'Loading recording gaps…');
  const csv = h('button', { type: 'button', testid: 'market-csv' }, 'Download CSV');
  const head = h('div', { class: 'market-head' });
  const back = h('p', null, h('a', { href: '#/markets' }, '← Markets'));
  // An address that names no market (#/market/, cut short) says so, where
  // it asked the API for the series of the market "" (no such endpoint).
  if (!slug) {
    clear(ctx.el, back, h('h1', null, 'Market'), h('p', { class: 'card', role: 'alert', testid: 'market-none' }, 'This address names no market: pick one from the markets list.'));
    ctx.ready();
    return;
  }
  // The instant's controls, the books and the CSV download come once the
  // series says there are snapshots to pick from: a market without any
  // (or no market: 404) shows no dead controls.
  clear(ctx.el, back, h('h1', null, slug), head, chartBox);
  let series: Series;
  try {
    series = (await get<{ data: Series }>(`/v1/markets/${encodeURIComponent(slug)}/series?points=2000`)).data;
  } catch (e) {
    if (e instanceof ApiError && e.code === 'TIER_ACCESS_DENIED') {
      // Said once, in the chart's place, with the upgrade link; not again in the banner above.
      clear(chartBox, h('p', { class: 'denied', role: 'alert', testid: 'market-denied' }, `${e.message}. `, upgradeLink(ctx)));
      ctx.ready();
      return;
    }
    clear(ctx.el, back, h('h1', null, slug)); // the error banner says why
    throw e;
  }
  const m = series.market;
  const pd = marketPriceDecimals(m);
  head.append(
    h(
      'dl',
      { class: 'figures' },
      fig('Type', m.market_type),
      fig('Start (UTC)', time(m.start_time), undefined, 'wide'),
      fig('End (UTC)', time(m.end_time), undefined, 'wide'),
      fig('Winner', m.winner ?? 'not resolved'),
      fig('Coin price', `${usd(m.coin_price_start)} → ${usd(m.coin_price_end)}`, undefined, 'wide'),
      fig('Volume', usd(m.final_volume)),
      fig('Snapshots', int(series.snapshots), 'market-snapshots'),
      fig('Taker fee of a fill at price p', marketFees(m), 'market-fee', 'wide'),
    ),
  );

  let picked = -1;
  // The CSV is 1,000 snapshots (the API's largest page): the whole market
  // when it has no more, else those around the instant picked (the first
  // ones before a pick), 1,000 even near the market's end.
  const CSV_ROWS = 1000;
  const csvOffset = (k: number) => Math.min(Math.max(0, series.index[k] - CSV_ROWS / 2), Math.max(0, series.snapshots - CSV_ROWS));
  const csvLabel = () => {
    csv.textContent =
      series.snapshots <= CSV_ROWS
        ? `Download CSV (all ${plural(series.snapshots, 'snapshot')})`
        : picked < 0
          ? `Download CSV (the first ${int(CSV_ROWS)} snapshots; pick an instant for others)`
          : `Download CSV (${int(CSV_ROWS)} snapshots around the instant)`;
  };
  csvLabel();
  const pick = async (k: number) => {
    if (k < 0 || k >= series.time.length) return;
    picked = k;
    csvLabel();
    slider.value = String(k);
    // Counted from the oldest (order=asc), which snapshots recorded since
    // the page loaded do not shift, as they do a count from the newest.
    const offset = series.index[k];
    try {
      const r = await get<{ snapshots: Snapshot[] }>(`/v1/markets/${encodeURIComponent(slug)}/snapshots?order=asc&limit=1&offset=${offset}&include_orderbook=true`);
      const s = r.snapshots[0];
      if (!s || picked !== k) return;
      instantInfo.textContent = `${time(s.time, true)} UTC: price_up ${num(s.price_up, pd)}, price_down ${num(s.price_down, pd)}, coin ${usd(s.coin_price)}`;
      instantInfo.setAttribute('data-time', s.time);
      clear(
        books,
        bookTable('market-book-up', `UP book at ${time(s.time, true)}`, pd, s.orderbook_up ?? null, true),
        bookTable('market-book-down', `DOWN book at ${time(s.time, true)}`, pd, s.orderbook_down ?? null, true),
      );
    } catch (e) {
      ctx.error(e);
    }
  };

  if (series.time.length === 0 || series.snapshots === 0) {
    chartBox.replaceWith(h('p', { class: 'card', testid: 'market-no-snapshots' }, 'No snapshots recorded for this market: there is no chart, order book or CSV to show.'));
    ctx.ready();
    return;
  }
  // The recording gaps, asked for beside the chart: a stretch without
  // snapshots breaks its lines, which would otherwise join the last price
  // before it to the first after it as if it had been recorded.
  const gapsAnswer = get<any>(`/v1/markets/${encodeURIComponent(slug)}/gaps`).then(
    (g) => (Array.isArray(g) ? g : (g.gaps ?? g.data ?? [])) as { from: string; to: string; kind?: string }[],
  );
  gapsAnswer.catch(() => {}); // said under "Recording gaps" below
  // Each snapshot gap as the times (epoch s) of the points either side of it.
  let holes: [number, number][] = [];
  const breaks: uPlot.Series.GapsRefiner = (u, _si, _i0, _i1, nullGaps) =>
    holes.length === 0
      ? nullGaps
      : [...nullGaps, ...holes.map(([a, b]): uPlot.Series.Gap => [u.valToPos(a, 'x', true), u.valToPos(b, 'x', true)])].sort((x, y) => x[0] - y[0]);
  ctx.el.append(
    field('Instant', slider),
    instantInfo,
    books,
    h('h2', null, 'Recording gaps'),
    gaps,
    h('h2', null, 'Data'),
    h('p', null, csv, ' ', replayLink(ctx, m)),
  );
  {
    slider.max = String(series.time.length - 1);
    const xs = series.time.map((t) => t / 1000);
    const u = draw(
      chartBox,
      {
        width: chartWidth(ctx.el),
        height: 360,
        scales: { x: { time: true }, p: { range: [0, 1] }, c: {} },
        axes: [
          timeAxis(),
          { scale: 'p', label: 'price', size: 50, values: numberTicks() },
          { scale: 'c', side: 1, label: 'coin price ($)', size: 78, grid: { show: false }, values: numberTicks() },
        ],
        series: [
          timeSeries(),
          { label: 'price_up', scale: 'p', stroke: COLORS.up, width: 1.5, value: (_u, v) => num(v, pd), gaps: breaks },
          { label: 'price_down', scale: 'p', stroke: COLORS.down, width: 1.5, value: (_u, v) => num(v, pd), gaps: breaks },
          { label: 'coin price', scale: 'c', stroke: COLORS.coin, width: 1, value: (_u, v) => usd(v), gaps: breaks },
        ],
        plugins: [
          bandPlugin([
            { min: series.price_up.min, max: series.price_up.max, scale: 'p', fill: 'rgba(26,127,55,0.18)' },
            { min: series.price_down.min, max: series.price_down.max, scale: 'p', fill: 'rgba(207,34,46,0.15)' },
          ], series.bucket_ms / 1000),
        ],
        cursor: { drag: { x: true, y: false } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      },
      [xs, series.price_up.first, series.price_down.first, series.coin_price.first],
    );
    chartBox.after(h('p', { class: 'muted chart-note' }, 'Lines: each time bucket\'s first value. Shading: the lowest to highest price_up and price_down in the bucket.'));
    void gapsAnswer.then(
      (list) => {
        holes = list
          .filter((g) => (g.kind ?? 'snapshots') === 'snapshots')
          .map((g): [number, number] | null => {
            const from = Date.parse(g.from) / 1000;
            const to = Date.parse(g.to) / 1000;
            const after = xs.findIndex((x) => x > from);
            const a = (after < 0 ? xs.length : after) - 1; // the last point at or before the gap
            const b = xs.findIndex((x) => x >= to); // the first at or after its end
            return a >= 0 && b > a ? [xs[a], xs[b]] : null;
          })
          .filter((x): x is [number, number] => x !== null);
        if (holes.length) u.redraw(true);
        chartBox.setAttribute('data-breaks', String(holes.length));
      },
      () => {},
    );
    u.over.addEventListener('click', () => {
      const k = u.cursor.idx;
      if (k !== null && k !== undefined) void pick(k);
    });
    slider.addEventListener('change', () => void pick(Number(slider.value)));
  }

  csv.addEventListener('click', async () => {
    const offset = picked >= 0 ? csvOffset(picked) : 0;
    try {
      const text = await call<string>('GET', `/v1/markets/${encodeURIComponent(slug)}/snapshots?order=asc&limit=${CSV_ROWS}&offset=${offset}&include_orderbook=true`, undefined, {
        headers: { Accept: 'text/csv' },
        raw: true,
      });
      const a = h('a', { href: URL.createObjectURL(new Blob([text], { type: 'text/csv' })), download: `${slug}-${offset}.csv` });
      document.body.append(a);
      a.click();
      a.remove();
    } catch (e) {
      ctx.error(e);
    }
  });

  ctx.ready(); // the chart is usable; the gaps follow
  try {
    const list = await gapsAnswer;
    // A gap's kind says what is missing: snapshots (none stored), or only
    // trades (snapshots went on while the trade feed was down).
    const what = (kind?: string) => (kind === 'trades' ? 'trades may be missing (snapshots went on)' : 'no snapshots');
    clear(
      gaps,
      list.length === 0
        ? h('p', null, 'No recording gaps: every stretch longer than 3 s without snapshots, or without the trade feed, would be listed here.')
        : h('ul', null, list.map((x) => h('li', { 'data-kind': x.kind ?? 'snapshots' }, `${time(x.from, true)} → ${time(x.to, true)} UTC: ${what(x.kind)}`))),
    );
  } catch (e) {
    clear(gaps, h('p', { class: 'muted' }, `Recording gaps are not available here (${(e as Error).message}).`));
  }
}

