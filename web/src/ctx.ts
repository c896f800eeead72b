import { h } from './dom';

export interface PlanInfo {
  tier: string;
  markets_window: string;
  window_days: number | null;
  last_n: Record<string, number> | null;
  eth_sol_markets: boolean;
  exchange_data: boolean;
  replay: boolean;
  backtest_ai: boolean;
  ai_generations_per_month: number | null;
  /** What the plan allows of parameter sweeps; null (or absent from an older server): none. */
  sweeps?: { max_trials: number; max_markets: number; max_replays: number; concurrent: number } | null;
  rate_limits: { per_minute: number | null; per_day: number | null };
}

export interface Session {
  customer_id: string;
  email: string;
  name: string;
  tier: string;
  key_id: string;
  csrf_token: string;
  expires_at: string;
  plan: PlanInfo;
}

export interface Ctx {
  session: Session;
  checkoutURL: string | null;
  el: HTMLElement;
  path: string[];
  params: URLSearchParams;
  error(e: unknown): void;
  clearError(): void;
  /** Marks the page usable (tests measure the time to it). */
  ready(): void;
  /** False once the user has moved to another page. */
  current(): boolean;
}

/** The upgrade link: the checkout when the server has one, else the plans. */
export function upgradeLink(ctx: Pick<Ctx, 'checkoutURL'>): HTMLAnchorElement {
  return ctx.checkoutURL
    ? h('a', { href: ctx.checkoutURL, class: 'upgrade', rel: 'noopener' }, 'Upgrade your plan')
    : h('a', { href: '#/account', class: 'upgrade' }, 'See the plans and upgrade');
}

/** A page's plain statement of what the plan does not allow. what is
 * written as at the start of a sentence; mid-sentence only its first letter
 * is lowered, so that its names keep their capitals ("the Backtest AI
 * agent"); plural for a name that is ("Parameter sweeps are"). */
export function denied(ctx: Ctx, what: string, needs: string, plural = false): HTMLElement {
  return h(
    'section',
    { class: 'card denied', testid: 'plan-denied' },
    h('h2', null, `${what} ${plural ? 'are' : 'is'} not in your plan`),
    h('p', null, `Your plan, ${ctx.session.tier}, does not include ${what.charAt(0).toLowerCase()}${what.slice(1)}. ${plural ? 'They need' : 'It needs'} ${needs}.`),
    upgradeLink(ctx),
  );
}

/** A plan's limit, written small beside the control or result it limits. */
export function planHint(ctx: Ctx, text: string): HTMLElement {
  const link = ctx.checkoutURL ? h('a', { href: ctx.checkoutURL, rel: 'noopener' }, 'upgrade') : h('a', { href: '#/account' }, 'plans');
  return h('span', { class: 'plan-hint', testid: 'plan-hint' }, text, ' ', link);
}
