import { ApiError, call, get } from '../api';
import { chartWidth, COLORS, draw, uPlot } from '../chart';
import { type Ctx, planNote, upgradeLink } from '../ctx';
import { clear, field, fmtNum, fmtTime, h, select } from '../dom';

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
}

const TYPES: Record<string, string[]> = { BTC: ['5m', '15m', '1hr', '4hr', '24hr'], ETH: ['5m', '15m', '1hr'], SOL: ['5m', '15m', '1hr'] };
const PAGE = 25;

export async function marketsPage(ctx: Ctx): Promise<void> {
  const p = ctx.params;
  const plan = ctx.session.plan;
  const coins = plan.eth_sol_markets ? ['BTC', 'ETH', 'SOL'] : ['BTC'];
  const coin = select('markets-coin', [['BTC', 'BTC'], ['ETH', 'ETH'], ['SOL', 'SOL']], p.get('coin') ?? 'BTC');
  // 4hr and 24hr markets exist for BTC only.
  const type = select('markets-type', [['', 'any'], ...(TYPES[coin.value] ?? TYPES.BTC).map((t): [string, string] => [t, t])], p.get('type') ?? '');
  const resolved = select('markets-resolved', [['', 'any'], ['true', 'resolved'], ['false', 'active']], p.get('resolved') ?? '');
  const from = h('input', { type: 'datetime-local', testid: 'markets-from', value: p.get('from') ?? '' });
  const to = h('input', { type: 'datetime-local', testid: 'markets-to', value: p.get('to') ?? '' });
  const offset = Number(p.get('offset') ?? 0) || 0;
  const filters = h(
    'form',
    { class: 'filters', 'aria-label': 'Market filters' },
    field('Coin', coin),
    field('Market type', type),
    field('Status', resolved),
    field('Starting after (UTC)', from),
    field('Starting before (UTC)', to),
  );
  const apply = (off = 0) => {
    const q = new URLSearchParams();
    q.set('coin', coin.value);
    if (type.value) q.set('type', type.value);
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
  const notes: HTMLElement[] = [];
  if (!plan.eth_sol_markets) notes.push(planNote(ctx, `Your plan, ${plan.tier}, covers ${plan.markets_window}. ETH and SOL markets and older history need PRO or above.`));
  else if (plan.window_days) notes.push(planNote(ctx, `Your plan, ${plan.tier}, covers ${plan.markets_window}.`));

  const tbody = h('tbody');
  const table = h(
    'table',
    { testid: 'markets-table', class: 'data' },
    h('caption', null, `${coin.value} markets, newest first`),
    h('thead', null, h('tr', null, ['Market', 'Type', 'Start (UTC)', 'End (UTC)', 'Winner', 'Coin start', 'Coin end', 'Volume'].map((t) => h('th', { scope: 'col' }, t)))),
    tbody,
  );
  const warning = h('p', { class: 'warning', role: 'status' });
  const pager = h('div', { class: 'pager' });
  clear(ctx.el, h('h1', null, 'Markets'), notes, filters, warning, table, pager);

  const q = new URLSearchParams({ coin: coin.value, limit: String(PAGE), offset: String(offset) });
  if (type.value) q.set('market_type', type.value);
  if (resolved.value) q.set('resolved', resolved.value);
  if (from.value) q.set('start_time', new Date(from.value + 'Z').toISOString());
  if (to.value) q.set('end_time', new Date(to.value + 'Z').toISOString());
  try {
    const r = await get<{ markets: Market[]; total: number; warning: string | null }>(`/v1/markets?${q}`);
    for (const m of r.markets) {
      tbody.append(
        h(
          'tr',
          { testid: 'market-row', 'data-slug': m.slug },
          h('td', null, h('a', { href: `#/market/${encodeURIComponent(m.slug)}` }, m.slug)),
          h('td', null, m.market_type),
          h('td', null, fmtTime(m.start_time)),
          h('td', null, fmtTime(m.end_time)),
          h('td', null, m.winner ?? 'active'),
          h('td', { class: 'num' }, fmtNum(m.coin_price_start, 2)),
          h('td', { class: 'num' }, fmtNum(m.coin_price_end, 2)),
          h('td', { class: 'num' }, fmtNum(m.final_volume, 2)),
        ),
      );
    }
    if (r.markets.length === 0) tbody.append(h('tr', null, h('td', { colspan: 8 }, 'No markets match these filters.')));
    if (r.warning) warning.append(r.warning, ' ', upgradeLink(ctx));
    const prev = h('button', { type: 'button', disabled: offset === 0 }, '← Newer');
    const next = h('button', { type: 'button', disabled: offset + PAGE >= r.total }, 'Older →');
    prev.addEventListener('click', () => apply(Math.max(0, offset - PAGE)));
    next.addEventListener('click', () => apply(offset + PAGE));
    pager.append(prev, h('span', null, `${r.total ? offset + 1 : 0}–${Math.min(offset + PAGE, r.total)} of ${r.total}`), next);
  } catch (e) {
    if (e instanceof ApiError && e.code === 'TIER_ACCESS_DENIED') {
      tbody.append(h('tr', null, h('td', { colspan: 8 }, e.message, ' ', upgradeLink(ctx))));
      if (!coins.includes(coin.value)) ctx.error(e);
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

function bookTable(testid: string, title: string, book?: { asks: Level[]; bids: Level[] }): HTMLElement {
  const asks = [...(book?.asks ?? [])].sort((a, b) => b.price - a.price);
  const bids = [...(book?.bids ?? [])].sort((a, b) => b.price - a.price);
  const row = (side: string, l: Level) => h('tr', { class: side, 'data-side': side }, h('td', null, side), h('td', { class: 'num' }, String(l.price)), h('td', { class: 'num' }, String(l.size)));
  return h(
    'table',
    { testid, class: 'data book' },
    h('caption', null, title),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Side'), h('th', { scope: 'col' }, 'Price'), h('th', { scope: 'col' }, 'Size'))),
    h('tbody', null, asks.map((l) => row('ask', l)), bids.map((l) => row('bid', l)), !asks.length && !bids.length ? h('tr', null, h('td', { colspan: 3 }, 'No book recorded at this instant.')) : null),
  );
}

export async function marketPage(ctx: Ctx): Promise<void> {
  const slug = ctx.path[1] ?? '';
  const chartBox = h('div', { class: 'chart', testid: 'market-chart', role: 'img', 'aria-label': 'price_up, price_down and coin price over the market' });
  const books = h('div', { class: 'books' }, bookTable('market-book-up', 'UP book'), bookTable('market-book-down', 'DOWN book'));
  const instantInfo = h('p', { class: 'instant', role: 'status', testid: 'market-instant' }, 'Click the chart, or use the slider, to see both order books at that instant.');
  const slider = h('input', { type: 'range', min: '0', max: '0', value: '0', testid: 'market-instant-slider' });
  const gaps = h('div', { testid: 'market-gaps', class: 'gaps' }, 'Loading recording gaps…');
  const csv = h('button', { type: 'button', testid: 'market-csv' }, 'Download CSV (1,000 snapshots around the instant)');
  const head = h('div', { class: 'market-head' });
  clear(
    ctx.el,
    h('p', null, h('a', { href: '#/markets' }, '← Markets')),
    h('h1', null, slug),
    head,
    chartBox,
    field('Instant', slider),
    instantInfo,
    books,
    h('h2', null, 'Recording gaps'),
    gaps,
    h('h2', null, 'Data'),
    h('p', null, csv, ' ', h('a', { href: `#/replay?market=${encodeURIComponent(slug)}` }, 'Replay a strategy on this market')),
  );

  let series: Series;
  try {
    series = (await get<{ data: Series }>(`/v1/markets/${encodeURIComponent(slug)}/series?points=2000`)).data;
  } catch (e) {
    if (e instanceof ApiError && e.code === 'TIER_ACCESS_DENIED') {
      clear(chartBox, h('p', { class: 'denied' }, e.message, ' ', upgradeLink(ctx)));
      ctx.error(e);
      ctx.ready();
      return;
    }
    throw e;
  }
  const m = series.market;
  head.append(
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Type'), h('dd', null, m.market_type),
      h('dt', null, 'Start'), h('dd', null, fmtTime(m.start_time)),
      h('dt', null, 'End'), h('dd', null, fmtTime(m.end_time)),
      h('dt', null, 'Winner'), h('dd', null, m.winner ?? 'not resolved'),
      h('dt', null, 'Coin price'), h('dd', null, `${fmtNum(m.coin_price_start, 2)} → ${fmtNum(m.coin_price_end, 2)}`),
      h('dt', null, 'Snapshots'), h('dd', { testid: 'market-snapshots' }, String(series.snapshots)),
    ),
  );

  let picked = -1;
  const pick = async (k: number) => {
    if (k < 0 || k >= series.time.length) return;
    picked = k;
    slider.value = String(k);
    const offset = series.snapshots - 1 - series.index[k];
    try {
      const r = await get<{ snapshots: Snapshot[] }>(`/v1/markets/${encodeURIComponent(slug)}/snapshots?limit=1&offset=${offset}&include_orderbook=true`);
      const s = r.snapshots[0];
      if (!s || picked !== k) return;
      instantInfo.textContent = `${fmtTime(s.time)}: price_up ${s.price_up}, price_down ${s.price_down}, coin ${s.coin_price}`;
      instantInfo.setAttribute('data-time', s.time);
      clear(books, bookTable('market-book-up', `UP book at ${fmtTime(s.time)}`, s.orderbook_up), bookTable('market-book-down', `DOWN book at ${fmtTime(s.time)}`, s.orderbook_down));
    } catch (e) {
      ctx.error(e);
    }
  };

  if (series.time.length === 0) {
    clear(chartBox, h('p', null, 'No snapshots were recorded for this market.'));
  } else {
    slider.max = String(series.time.length - 1);
    const xs = series.time.map((t) => t / 1000);
    const u = draw(
      chartBox,
      {
        width: chartWidth(ctx.el),
        height: 360,
        scales: { x: { time: true }, p: { range: [0, 1] }, c: {} },
        axes: [
          {},
          { scale: 'p', label: 'price', size: 50 },
          { scale: 'c', side: 1, label: 'coin price', size: 80, grid: { show: false } },
        ],
        series: [
          { label: 'time (UTC)' },
          { label: 'price_up', scale: 'p', stroke: COLORS.up, width: 1.5 },
          { label: 'price_down', scale: 'p', stroke: COLORS.down, width: 1.5 },
          { label: 'coin price', scale: 'c', stroke: COLORS.coin, width: 1 },
          { label: 'price_up max', scale: 'p', stroke: 'rgba(26,127,55,0.35)', width: 1 },
          { label: 'price_up min', scale: 'p', stroke: 'rgba(26,127,55,0.35)', width: 1 },
        ],
        cursor: { drag: { x: true, y: false } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      },
      [xs, series.price_up.first, series.price_down.first, series.coin_price.first, series.price_up.max, series.price_up.min],
    );
    u.over.addEventListener('click', () => {
      const k = u.cursor.idx;
      if (k !== null && k !== undefined) void pick(k);
    });
    slider.addEventListener('change', () => void pick(Number(slider.value)));
  }

  csv.addEventListener('click', async () => {
    const k = picked >= 0 ? picked : 0;
    const offset = series.time.length ? Math.max(0, series.snapshots - 1 - series.index[k] - 500) : 0;
    try {
      const text = await call<string>('GET', `/v1/markets/${encodeURIComponent(slug)}/snapshots?limit=1000&offset=${offset}&include_orderbook=true`, undefined, {
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
    const g = await get<any>(`/v1/markets/${encodeURIComponent(slug)}/gaps`);
    const list: { from: string; to: string }[] = Array.isArray(g) ? g : (g.gaps ?? g.data ?? []);
    clear(
      gaps,
      list.length === 0
        ? h('p', null, 'No recording gaps: every stretch without snapshots longer than 3 s would be listed here.')
        : h('ul', null, list.map((x) => h('li', null, `${fmtTime(x.from)} → ${fmtTime(x.to)}`))),
    );
  } catch (e) {
    clear(gaps, h('p', { class: 'muted' }, `Recording gaps are not available here (${(e as Error).message}).`));
  }
}
