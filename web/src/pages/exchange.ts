import { ApiError, get } from '../api';
import { chartWidth, COLORS, draw, numberTicks, timeAxis, timeSeries, uPlot } from '../chart';
import { type Ctx, denied } from '../ctx';
import { clear, field, h, labelCells, select, td, tdTime, th } from '../dom';
import { num, time, usd } from '../format';

/** Decimals of a coin quantity (Binance's step sizes). */
const QTY: Record<string, number> = { btc: 5, eth: 4, sol: 3 };

interface Level {
  price: number;
  quantity: number;
}

export async function exchangePage(ctx: Ctx): Promise<void> {
  if (!ctx.session.plan.exchange_data) {
    clear(ctx.el, h('h1', null, 'Exchange data'), denied(ctx, 'Exchange data', 'PRO, SUITE or ENTERPRISE'));
    ctx.ready();
    return;
  }
  const coin = select('exchange-coin', [['btc', 'BTC'], ['eth', 'ETH'], ['sol', 'SOL']], ctx.params.get('coin') ?? 'btc');
  const kind = select('exchange-kind', [['spot', 'spot'], ['future', 'futures']], ctx.params.get('kind') ?? 'spot');
  const depth = h('div', { class: 'chart', testid: 'depth-chart', role: 'img', 'aria-label': 'Cumulative bid and ask depth' });
  const price = h('p', { class: 'big', role: 'status' });
  const trades = h('tbody');
  const history = h('div', { class: 'chart', testid: 'depth-history-chart', role: 'img', 'aria-label': 'BTC depth history: coin price, and the spread between best ask and best bid on its own scale' });
  const go = () => (location.hash = `#/exchange?coin=${coin.value}&kind=${kind.value}`);
  // The market in words, as its box names it ("future" is the API's path word).
  const market = kind.value === 'future' ? 'futures' : 'spot';
  coin.addEventListener('change', go);
  kind.addEventListener('change', go);
  clear(
    ctx.el,
    h('h1', null, 'Exchange data'),
    h('div', { class: 'filters' }, field('Coin', coin), field('Market', kind)),
    price,
    h('h2', null, 'Latest depth'),
    depth,
    h('h2', null, 'Recent trades'),
    h(
      'table',
      { class: 'data cards', testid: 'exchange-trades-table' },
      h('caption', null, `${coin.value.toUpperCase()} ${market} trades, newest first`),
      h('thead', null, h('tr', null, th('Time (UTC)'), th('Price', true), th(`Quantity (${coin.value.toUpperCase()})`, true), th('Quote', true), th('Maker side'))),
      trades,
    ),
    h('h2', null, `BTC ${market} depth history`),
    history,
  );
  const base = `/v1/${coin.value}/${kind.value}`;
  // Each part stands on its own: a series with nothing recorded yet (404:
  // a new server, a feed that has not answered) says so in its place, and
  // the others, BTC's depth history among them, are still shown.
  const nothingYet = (e: unknown) => e instanceof ApiError && e.status === 404;
  const [latest, recent] = await Promise.allSettled([
    get<{ data: { coin_price: number; bids: Level[]; asks: Level[] } }>(`${base}/latest`),
    get<{ data: any[] }>(`${base}/trades?limit=50`),
  ]);
  if (latest.status === 'fulfilled') {
    const d = latest.value.data;
    price.textContent = `${coin.value.toUpperCase()} ${market}: ${usd(d.coin_price)}`;
    price.setAttribute('data-testid', 'exchange-price');
    depthChart(depth, d.bids, d.asks, coin.value.toUpperCase(), QTY[coin.value] ?? 4);
  } else if (nothingYet(latest.reason)) {
    depth.textContent = `No depth yet: ${(latest.reason as Error).message}.`;
  } else ctx.error(latest.reason);
  const qd = QTY[coin.value] ?? 4;
  if (recent.status === 'fulfilled') {
    for (const t of recent.value.data) {
      trades.append(
        h('tr', { 'data-id': String(t.id) }, tdTime(time(t.time, true)), td(usd(t.price), true), td(num(t.qty, qd), true), td(usd(t.quoteQty), true), h('td', { class: 'after' }, t.isBuyerMaker ? 'buyer' : 'seller')),
      );
    }
    if (!recent.value.data.length) trades.append(h('tr', null, h('td', { colspan: 5, class: 'muted' }, 'No trades recorded yet.')));
  } else if (nothingYet(recent.reason)) {
    trades.append(h('tr', null, h('td', { colspan: 5, class: 'muted' }, (recent.reason as Error).message)));
  } else if (latest.status === 'fulfilled' || nothingYet(latest.reason)) ctx.error(recent.reason); // one banner for both
  labelCells(trades.closest('table') as HTMLTableElement);
  ctx.ready();
  try {
    const hist = await get<{ data: { time_epoch_ms: number; coin_price: number; bids: Level[]; asks: Level[] }[] }>(`/v1/btc/${kind.value}/snapshots?limit=1000`);
    const pts = [...hist.data].sort((a, b) => a.time_epoch_ms - b.time_epoch_ms);
    if (!pts.length) {
      history.textContent = 'No depth history recorded.';
      return;
    }
    // Best bid and ask sit cents from the price: drawn on the price's scale
    // they are one line. The spread between them gets its own scale.
    const spread = pts.map((p) => (p.bids.length && p.asks.length ? Math.min(...p.asks.map((l) => l.price)) - Math.max(...p.bids.map((l) => l.price)) : null));
    draw(
      history,
      {
        width: chartWidth(ctx.el),
        height: 260,
        scales: { x: { time: true }, $: {}, s: { range: (_u, lo, hi) => [Math.min(0, lo), hi > 0 ? hi * 1.1 : 1] } },
        series: [
          timeSeries(),
          { label: 'coin price', scale: '$', stroke: COLORS.coin, width: 1.25, value: (_u, v) => usd(v) },
          { label: 'spread (best ask − best bid)', scale: 's', stroke: COLORS.spread, width: 1, value: (_u, v) => usd(v) },
        ],
        axes: [timeAxis(), { scale: '$', label: 'coin price ($)', size: 78, values: numberTicks() }, { scale: 's', side: 1, label: 'spread ($)', size: 60, grid: { show: false }, values: numberTicks() }],
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      },
      [pts.map((p) => p.time_epoch_ms / 1000), pts.map((p) => p.coin_price), spread],
    );
  } catch (e) {
    history.textContent = e instanceof ApiError ? e.message : String(e);
  }
}

/** The book's cumulative depth; quantities are in the coin (BTC), as the trades table's. */
function depthChart(el: HTMLElement, bids: Level[], asks: Level[], coin: string, qd: number): void {
  const b = [...bids].sort((x, y) => y.price - x.price);
  const a = [...asks].sort((x, y) => x.price - y.price);
  const xs: number[] = [];
  const bidCum: (number | null)[] = [];
  const askCum: (number | null)[] = [];
  let cum = 0;
  const bidPts = b.map((l) => ((cum += l.quantity), [l.price, cum] as const)).reverse();
  cum = 0;
  const askPts = a.map((l) => ((cum += l.quantity), [l.price, cum] as const));
  for (const [p, q] of bidPts) {
    xs.push(p);
    bidCum.push(q);
    askCum.push(null);
  }
  for (const [p, q] of askPts) {
    xs.push(p);
    bidCum.push(null);
    askCum.push(q);
  }
  if (!xs.length) {
    el.textContent = 'No depth yet.';
    return;
  }
  draw(
    el,
    {
      width: chartWidth(el.parentElement ?? el),
      height: 280,
      scales: { x: { time: false } },
      axes: [{ label: 'price ($)', values: numberTicks(), space: 70 }, { label: `cumulative quantity (${coin})`, size: 70, values: numberTicks() }],
      series: [
        { label: 'price', value: (_u, v) => usd(v) },
        { label: 'bids', stroke: COLORS.up, fill: 'rgba(26,127,55,0.2)', paths: uPlot.paths.stepped!({ align: -1 }), value: (_u, v) => num(v, qd) },
        { label: 'asks', stroke: COLORS.down, fill: 'rgba(207,34,46,0.2)', paths: uPlot.paths.stepped!({ align: 1 }), value: (_u, v) => num(v, qd) },
      ],
    },
    [xs, bidCum, askCum],
  );
}
