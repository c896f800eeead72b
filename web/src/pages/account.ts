import { del, get, post } from '../api';
import type { Ctx, PlanInfo } from '../ctx';
import { clear, fmtTime, h } from '../dom';

interface Key {
  id: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  current: boolean;
}

export async function accountPage(ctx: Ctx): Promise<void> {
  const [acct, keys, billing] = await Promise.all([
    get<{ data: any }>('/v1/account'),
    get<{ data: { keys: Key[]; live: number; max_live: number } }>('/v1/account/keys'),
    get<{ data: { current_tier: string; plans: PlanInfo[]; checkout_url: string | null } }>('/v1/account/billing'),
  ]);
  const a = acct.data;
  const lim = (n: number | null) => (n === null ? 'unlimited' : String(n));
  const q = a.ai_quota;
  const keysBody = h('tbody');
  const newKey = h('div', { 'aria-live': 'polite' });
  const create = h('button', { type: 'button', testid: 'key-create' }, 'Create a key');
  const renderKeys = (list: Key[], live: number, max: number) => {
    create.disabled = live >= max;
    create.title = live >= max ? `At most ${max} live keys: revoke one first` : '';
    clear(
      keysBody,
      list.map((k) => {
        const revoke = h('button', { type: 'button', testid: 'key-revoke', 'data-key-id': k.id, 'aria-label': `Revoke key ${k.prefix}` }, 'Revoke');
        revoke.addEventListener('click', async () => {
          if (k.current && !confirm('This is the key this session was opened with: revoking it signs you out. Revoke?')) return;
          try {
            await del(`/v1/account/keys/${encodeURIComponent(k.id)}`);
            await reload();
          } catch (e) {
            ctx.error(e);
          }
        });
        return h(
          'tr',
          { 'data-key-id': k.id, class: k.revoked_at ? 'revoked' : '' },
          h('td', null, h('code', null, `${k.prefix}…`), k.current ? ' (this session)' : ''),
          h('td', null, fmtTime(k.created_at)),
          h('td', null, k.revoked_at ? fmtTime(k.revoked_at) : 'live'),
          h('td', null, k.revoked_at ? '' : revoke),
        );
      }),
    );
  };
  const reload = async () => {
    const k = await get<{ data: { keys: Key[]; live: number; max_live: number } }>('/v1/account/keys');
    renderKeys(k.data.keys, k.data.live, k.data.max_live);
  };
  create.addEventListener('click', async () => {
    ctx.clearError();
    try {
      const r = await post<{ data: { key: string } }>('/v1/account/keys');
      clear(newKey, h('p', { class: 'card new-key' }, 'Your new key, shown this once (only its hash is kept): ', h('code', { testid: 'key-new-value' }, r.data.key)));
      await reload();
    } catch (e) {
      ctx.error(e);
    }
  });
  renderKeys(keys.data.keys, keys.data.live, keys.data.max_live);

  const yes = (b: boolean) => (b ? 'yes' : 'no');
  const plans = billing.data.plans;
  const rowsOf: [string, (p: PlanInfo) => string][] = [
    ['Market data', (p) => p.markets_window],
    ['ETH and SOL markets', (p) => yes(p.eth_sol_markets)],
    ['Exchange data', (p) => yes(p.exchange_data)],
    ['Strategy replay', (p) => yes(p.replay)],
    ['Backtest AI agent', (p) => yes(p.backtest_ai)],
    ['AI generations a month', (p) => lim(p.ai_generations_per_month)],
    ['Requests a minute', (p) => lim(p.rate_limits.per_minute)],
    ['Requests a day', (p) => lim(p.rate_limits.per_day)],
  ];
  clear(
    ctx.el,
    h('h1', null, 'Account'),
    h(
      'dl',
      { class: 'figures' },
      h('dt', null, 'Plan'), h('dd', { testid: 'account-tier' }, a.tier),
      h('dt', null, 'Email'), h('dd', null, a.email),
      h('dt', null, 'Requests today'), h('dd', { testid: 'account-usage' }, a.usage.today === null ? 'not counted on this server' : `${a.usage.today} of ${lim(a.rate_limits.per_day)}`),
      h('dt', null, 'This minute'), h('dd', null, a.usage.this_minute === null ? '—' : `${a.usage.this_minute} of ${lim(a.rate_limits.per_minute)}`),
      h('dt', null, 'AI generations this month'), h('dd', { testid: 'account-ai-quota' }, q.limit === null ? `${q.used} (unlimited)` : `${q.used} of ${q.limit}`),
    ),
    h('h2', null, 'API keys'),
    h('p', null, `Up to ${keys.data.max_live} live keys. A revoked key, and every session or token opened with it, stops working at its next request.`),
    h('table', { class: 'data', testid: 'keys-table' }, h('thead', null, h('tr', null, ['Key', 'Created (UTC)', 'Revoked (UTC)', ''].map((t) => h('th', { scope: 'col' }, t)))), keysBody),
    h('p', null, create),
    newKey,
    h('h2', { id: 'billing' }, 'Plans'),
    h(
      'table',
      { class: 'data plans', testid: 'billing-plans' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, ''), plans.map((p) => h('th', { scope: 'col', class: p.tier === a.tier ? 'current' : '' }, p.tier, p.tier === a.tier ? ' (yours)' : '')))),
      h('tbody', null, rowsOf.map(([label, f]) => h('tr', null, h('th', { scope: 'row' }, label), plans.map((p) => h('td', { class: p.tier === a.tier ? 'current' : '' }, f(p)))))),
    ),
    billing.data.checkout_url
      ? h('p', null, h('a', { href: billing.data.checkout_url, class: 'upgrade', rel: 'noopener' }, 'Change plan'))
      : h('p', { class: 'muted' }, 'This server has no checkout link configured (BILLING_URL): ask its operator to change your plan.'),
  );
  ctx.ready();
}
