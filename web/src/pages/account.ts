import { ApiError, del, get, post } from '../api';
import type { Ctx, PlanInfo } from '../ctx';
import { clear, fig, h, labelCells, td, tdTime, th } from '../dom';
import { int, limit, ofLimit, time } from '../format';

interface Key {
  id: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  current: boolean;
}

/** The keys the page lists: the API's largest page. */
const keysPath = '/v1/account/keys?limit=100';

/** A plan's sweeps: "200 trials × 200 markets, 20,000 replays, 1 at a time", or "no" without them, as the table says of the other features a plan lacks. */
export function sweepsWords(p: PlanInfo): string {
  const s = p.sweeps;
  if (!s) return 'no';
  return `${int(s.max_trials)} trials × ${int(s.max_markets)} markets, ${int(s.max_replays)} replays, ${int(s.concurrent)} at a time`;
}

/** A part of the page the server did not answer, said in its place. */
const partError = (testid: string, what: string, e: unknown) =>
  h('p', { class: 'warning', role: 'alert', testid }, `${what} could not be read: ${(e as Error).message}${e instanceof ApiError && e.code ? ` (${e.code})` : ''}.`);

export async function accountPage(ctx: Ctx): Promise<void> {
  // Each part stands on its own: the plans refused leave the keys usable.
  const [acctR, keysR, billingR] = await Promise.allSettled([
    get<{ data: any }>('/v1/account'),
    get<{ data: { keys: Key[]; live: number; max_live: number; total: number } }>(keysPath),
    get<{ data: { current_tier: string; plans: PlanInfo[]; checkout_url: string | null } }>('/v1/account/billing'),
  ]);
  // The account itself is the page: without it, the banner says why.
  if (acctR.status === 'rejected') throw acctR.reason;
  const a = acctR.value.data;
  const keys = keysR.status === 'fulfilled' ? keysR.value : null;
  const billing = billingR.status === 'fulfilled' ? billingR.value : null;
  const lim = limit;
  const q = a.ai_quota;
  const keysBody = h('tbody');
  const keysTable = h('table', { class: 'data cards', testid: 'keys-table' }, h('thead', null, h('tr', null, th('Key'), th('Created (UTC)'), th('Revoked (UTC)'), th(''))), keysBody);
  const newKey = h('div', { 'aria-live': 'polite' });
  const create = h('button', { type: 'button', testid: 'key-create' }, 'Create a key');
  const keysNote = h('p', { class: 'muted', testid: 'keys-more' });
  const renderKeys = (list: Key[], live: number, max: number, total: number) => {
    // Live keys come first, so every one is here; past the page are older
    // revoked ones, which the API pages through.
    keysNote.textContent =
      total > list.length
        ? `Showing ${int(list.length)} of ${int(total)} keys: every live one and the newest revoked; GET /v1/account/keys?offset=${list.length} lists the older revoked ones.`
        : '';
    create.disabled = live >= max;
    create.title = live >= max ? `At most ${max} live keys: revoke one first` : '';
    clear(
      keysBody,
      list.map((k) => {
        const revoke = h('button', { type: 'button', testid: 'key-revoke', 'data-key-id': k.id, 'aria-label': `Revoke key ${k.prefix}` }, 'Revoke');
        revoke.addEventListener('click', async () => {
          if (k.current && !confirm('This is the key this session was opened with: revoking it signs you out. Revoke?')) return;
          // The keyboard stays in the list as it is drawn again: on the
          // Revoke of the key now in this one's place, else the last one
          // left, else Create (where it fell to the page's top).
          const place = [...keysBody.querySelectorAll('[data-testid=key-revoke]')].indexOf(revoke);
          try {
            await del(`/v1/account/keys/${encodeURIComponent(k.id)}`);
            await reload();
            if (!ctx.current()) return;
            const left = keysBody.querySelectorAll<HTMLButtonElement>('[data-testid=key-revoke]');
            (left[place] ?? left[left.length - 1] ?? create).focus();
          } catch (e) {
            ctx.error(e);
          }
        });
        return h(
          'tr',
          { 'data-key-id': k.id, class: k.revoked_at ? 'revoked' : '' },
          h('td', { class: 'slug' }, h('code', null, `${k.prefix}…`), k.current ? ' (this session)' : ''),
          tdTime(time(k.created_at)),
          tdTime(k.revoked_at ? time(k.revoked_at) : 'live'),
          h('td', { class: 'actions' }, k.revoked_at ? '' : revoke),
        );
      }),
    );
    labelCells(keysTable);
  };
  const reload = async () => {
    const k = await get<{ data: { keys: Key[]; live: number; max_live: number; total: number } }>(keysPath);
    renderKeys(k.data.keys, k.data.live, k.data.max_live, k.data.total);
  };
  create.addEventListener('click', async () => {
    ctx.clearError();
    try {
      const r = await post<{ data: { key: string } }>('/v1/account/keys');
      const shown = h('p', { class: 'card new-key', tabindex: '-1' }, 'Your new key, shown this once (only its hash is kept): ', h('code', { testid: 'key-new-value' }, r.data.key));
      clear(newKey, shown);
      await reload();
      // The last key the plan allows disables Create: the keyboard goes
      // to the new key, to copy it, rather than to the page's top.
      if (create.disabled && ctx.current()) shown.focus();
    } catch (e) {
      ctx.error(e);
    }
  });
  if (keys) renderKeys(keys.data.keys, keys.data.live, keys.data.max_live, keys.data.total);

  const yes = (b: boolean) => (b ? 'yes' : 'no');
  const plans = billing?.data.plans ?? [];
  const rowsOf: [string, (p: PlanInfo) => string][] = [
    ['Market data', (p) => p.markets_window],
    ['ETH and SOL markets', (p) => yes(p.eth_sol_markets)],
    ['Exchange data', (p) => yes(p.exchange_data)],
    ['Strategy replay', (p) => yes(p.replay)],
    ['Backtest AI agent', (p) => yes(p.backtest_ai)],
    ['AI generations a month', (p) => lim(p.ai_generations_per_month)],
    ['Parameter sweeps', sweepsWords],
    ['Requests a minute', (p) => lim(p.rate_limits.per_minute)],
    ['Requests a day', (p) => lim(p.rate_limits.per_day)],
  ];
  clear(
    ctx.el,
    h('h1', null, 'Account'),
    h(
      'dl',
      { class: 'figures' },
      fig('Plan', a.tier, 'account-tier'),
      fig('Email', a.email, undefined, 'wide'),
      fig('Requests today', a.usage.today === null ? 'not counted on this server' : ofLimit(a.usage.today, a.rate_limits.per_day), 'account-usage'),
      fig('This minute', a.usage.this_minute === null ? '—' : ofLimit(a.usage.this_minute, a.rate_limits.per_minute)),
      // A plan without the agent has no generations: said so, not "0 of 0".
      fig('AI generations this month', ctx.session.plan.backtest_ai ? ofLimit(q.used, q.limit) : 'the Backtest AI agent is not in your plan', 'account-ai-quota'),
    ),
    h('h2', null, 'API keys'),
    keys
      ? [
          h('p', null, `Up to ${int(keys.data.max_live)} live keys. A revoked key, and every session or token opened with it, stops working at its next request.`),
          keysTable,
          keysNote,
          h('p', null, create),
          newKey,
        ]
      : partError('keys-error', 'Your keys', (keysR as PromiseRejectedResult).reason),
    h('h2', { id: 'billing' }, 'Plans'),
    billing ? null : partError('billing-error', 'The plans', (billingR as PromiseRejectedResult).reason),
    billing && h(
      'table',
      { class: 'data plans wide-scroll', testid: 'billing-plans' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, ''), plans.map((p) => h('th', { scope: 'col', class: p.tier === a.tier ? 'current' : '' }, p.tier, p.tier === a.tier ? ' (yours)' : '')))),
      h('tbody', null, rowsOf.map(([label, f]) => h('tr', null, h('th', { scope: 'row' }, label), plans.map((p) => h('td', { class: p.tier === a.tier ? 'current' : '' }, f(p)))))),
    ),
    // On a phone the comparison is one card per plan.
    billing && h(
      'div',
      { class: 'plan-cards' },
      plans.map((p) =>
        h(
          'section',
          { class: p.tier === a.tier ? 'card current' : 'card' },
          h('h3', null, p.tier, p.tier === a.tier ? ' (yours)' : ''),
          h('dl', null, rowsOf.map(([label, f]) => h('div', null, h('dt', null, label), h('dd', null, f(p))))),
        ),
      ),
    ),
    !billing
      ? null
      : billing.data.checkout_url
        ? h('p', null, h('a', { href: billing.data.checkout_url, class: 'upgrade', rel: 'noopener' }, 'Change plan'))
        : h('p', { class: 'muted' }, 'This server has no checkout link configured (BILLING_URL): ask its operator to change your plan.'),
  );
  ctx.ready();
}
