import { ApiError, get } from '../api';
import { chartWidth, COLORS, draw, uPlot } from '../chart';
import { type Ctx, denied } from '../ctx';
import { clear, field, fmtNum, fmtTime, h, select } from '../dom';

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
  const history = h('div', { class: 'chart', testid: 'depth-history-chart', role: 'img', 'aria-label': 'BTC depth history: coin price, best bid and best ask' });
  const go = () => (location.hash = `#/exchange?coin=${coin.value}&kind=${kind.value}`);
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
    h('table', { class: 'data', testid: 'exchange-trades-table' }, h('caption', null, `${coin.value.toUpperCase()} ${kind.value} trades, newest first`), h('thead', null, h('tr', null, ['Time (UTC)', 'Price', 'Quantity', 'Quote', 'Maker side'].map((t) => h('th', { scope: 'col' }, t)))), trades),
    h('h2', null, `BTC ${kind.value} depth history`),
    history,
  );
  const base = `/v1/${coin.value}/${kind.value}`;
  const [latest, recent] = await Promise.all([get<{ data: { coin_price: number; bids: Level[]; asks: Level[] } }>(`${base}/latest`), get<{ data: any[] }>(`${base}/trades?limit=50`)]);
  const d = latest.data;
  price.textContent = `${coin.value.toUpperCase()} ${kind.value}: ${fmtNum(d.coin_price, 2)}`;
  depthChart(depth, d.bids, d.asks);
  for (const t of recent.data) {
    trades.append(h('tr', { 'data-id': String(t.id) }, h('td', null, fmtTime(t.time)), h('td', { class: 'num' }, String(t.price)), h('td', { class: 'num' }, String(t.qty)), h('td', { class: 'num' }, String(t.quoteQty)), h('td', null, t.isBuyerMaker ? 'buyer' : 'seller')));
  }
  ctx.ready();
  try {
    const hist = await get<{ data: { time_epoch_ms: number; coin_price: number; bids: Level[]; asks: Level[] }[] }>(`/v1/btc/${kind.value}/snapshots?limit=1000`);
    const pts = [...hist.data].sort((a, b) => a.time_epoch_ms - b.time_epoch_ms);
    if (!pts.length) {
      history.textContent = 'No depth history recorded.';
      return;
    }
    draw(
      history,
      {
        width: chartWidth(ctx.el),
        height: 240,
        scales: { x: { time: true } },
        series: [
          { label: 'time (UTC)' },
          { label: 'coin price', stroke: COLORS.coin },
          { label: 'best bid', stroke: COLORS.up },
          { label: 'best ask', stroke: COLORS.down },
        ],
        axes: [{}, { size: 80 }],
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      },
      [pts.map((p) => p.time_epoch_ms / 1000), pts.map((p) => p.coin_price), pts.map((p) => (p.bids.length ? Math.max(...p.bids.map((l) => l.price)) : null)), pts.map((p) => (p.asks.length ? Math.min(...p.asks.map((l) => l.price)) : null))],
    );
  } catch (e) {
    history.textContent = e instanceof ApiError ? e.message : String(e);
  }
}

function depthChart(el: HTMLElement, bids: Level[], asks: Level[]): void {
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
      axes: [{ label: 'price' }, { label: 'cumulative quantity', size: 70 }],
      series: [
        { label: 'price' },
        { label: 'bids', stroke: COLORS.up, fill: 'rgba(26,127,55,0.2)', paths: uPlot.paths.stepped!({ align: -1 }) },
        { label: 'asks', stroke: COLORS.down, fill: 'rgba(207,34,46,0.2)', paths: uPlot.paths.stepped!({ align: 1 }) },
      ],
    },
    [xs, bidCum, askCum],
  );
}
