import './style.css';
import { ApiError, call, del, get, requestIdNote, setCsrf, setUnauthorizedHandler } from './api';
import { clear, h, markInvalid } from './dom';
import { clearDrafts } from './drafts';
import { type Ctx, type Session, upgradeLink } from './ctx';
import { marketsPage, marketPage } from './pages/markets';
import { replayPage } from './pages/replay';
import { agentPage } from './pages/agent';
import { sweepsPage } from './pages/sweeps';
import { exchangePage } from './pages/exchange';
import { accountPage } from './pages/account';

const root = document.getElementById('app') as HTMLElement;
const banner = h('div', { class: 'error-banner', role: 'alert', testid: 'error-banner', hidden: true });

function showError(e: unknown): void {
  const msg = e instanceof ApiError ? `${e.message}${e.code && e.status ? ` (${e.code})` : ''}${requestIdNote(e)}` : String((e as Error)?.message ?? e);
  banner.textContent = msg;
  // A limit of the plan (a tier error, a rate limit) names where to upgrade: the banner links there.
  if (e instanceof ApiError && typeof e.details?.upgrade_url === 'string' && session) {
    banner.append(' ', upgradeLink({ checkoutURL }));
  }
  banner.hidden = false;
}

function hideError(): void {
  banner.hidden = true;
  banner.textContent = '';
}

let session: Session | null = null;

/** How soon a session check the server refused is tried again. */
const sessionRetryMs = 3000;
let checkoutURL: string | null = null;

async function loadSession(): Promise<Session | null> {
  try {
    const s = await get<{ data: Session }>('/v1/auth/session');
    setCsrf(s.data.csrf_token);
    return s.data;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

function signInPage(message?: string): void {
  session = null;
  setCsrf('');
  const key = h('input', { id: 'signin-key', type: 'password', testid: 'signin-key', autocomplete: 'off', required: true, placeholder: 'ud_live_… or ud_dev_pro' });
  const form = h(
    'form',
    { class: 'signin card' },
    h('h1', null, 'updown'),
    h('p', null, 'Sign in with an API key. The key opens a session in this browser (12 hours, renewed as you use it); the key itself is not stored here.'),
    h('div', { class: 'field' }, h('label', { for: 'signin-key' }, 'API key'), key),
    h('button', { type: 'submit', testid: 'signin-submit' }, 'Sign in'),
    h('p', { class: 'muted' }, 'Running `updown dev`? Try ud_dev_pro, ud_dev_starter, ud_dev_pro_trial, ud_dev_suite or ud_dev_enterprise. The API reference is at ', h('a', { href: '/docs' }, '/docs'), '.'),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    hideError();
    try {
      await call('POST', '/v1/auth/session', undefined, { headers: { 'X-API-Key': key.value.trim() } });
      key.value = '';
      await start();
    } catch (e) {
      showError(e);
      // A key refused (401): the box is marked and takes the keyboard,
      // its key selected to type over, as a form's refused field does.
      if (e instanceof ApiError && e.status === 401) {
        markInvalid(key);
        key.select();
      }
    }
  });
  key.addEventListener('input', () => key.removeAttribute('aria-invalid'));
  document.title = 'Sign in · updown';
  clear(root, banner, h('main', { class: 'center', 'data-ready': 'signin' }, form));
  if (message) showError(message);
  key.focus();
}

const NAV: [string, string, string][] = [
  ['markets', 'Markets', 'nav-markets'],
  ['replay', 'Replay', 'nav-replay'],
  ['agent', 'Backtest AI', 'nav-agent'],
  ['sweeps', 'Sweeps', 'nav-sweeps'],
  ['exchange', 'Exchange', 'nav-exchange'],
  ['account', 'Account', 'nav-account'],
];

let main: HTMLElement;
let navLinks: HTMLAnchorElement[] = [];

function shell(s: Session): void {
  navLinks = NAV.map(([route, text, testid]) => h('a', { href: `#/${route}`, testid, 'data-route': route }, text));
  const signout = h('button', { type: 'button', class: 'link', testid: 'signout' }, 'Sign out');
  signout.addEventListener('click', async () => {
    try {
      await del('/v1/auth/session');
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) return showError(e);
    }
    clearDrafts(); // what the forms held goes with the session, not to the next one signed in here
    location.hash = '';
    signInPage();
  });
  main = h('main', { id: 'main', tabindex: '-1' });
  // On a phone the navigation folds behind a menu button.
  const menu = h('div', { class: 'menu', id: 'menu' }, h('nav', { 'aria-label': 'Dashboard' }, navLinks), h('span', { class: 'who' }, h('span', { class: 'tier', title: 'Your plan' }, s.tier), ' ', h('span', { class: 'email' }, s.email)), signout);
  const toggle = h('button', { type: 'button', class: 'menu-button', testid: 'menu-button', 'aria-controls': 'menu', 'aria-expanded': 'false', 'aria-label': 'Menu' }, h('span', { 'aria-hidden': 'true' }, '☰'), ' Menu');
  const header = h('header', null, h('a', { href: '#/markets', class: 'brand' }, 'updown'), toggle, menu);
  const setOpen = (open: boolean) => {
    header.classList.toggle('open', open);
    toggle.setAttribute('aria-expanded', String(open));
  };
  toggle.addEventListener('click', () => setOpen(!header.classList.contains('open')));
  menu.addEventListener('click', (ev) => {
    if ((ev.target as HTMLElement).closest('a')) setOpen(false);
  });
  header.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && header.classList.contains('open')) {
      setOpen(false);
      toggle.focus();
    }
  });
  clear(root, header, banner, main);
}

// True right after start() loaded the session: its first page needs no
// second look at it.
let sessionFresh = false;

/**
 * Looks at the session again beside a page: a plan changed since it was
 * loaded (a checkout, the billing webhook, an operator) shows from the next
 * page on, in the header and in what the pages allow, instead of the plan
 * the dashboard was opened with until a reload.
 */
async function refreshSession(): Promise<void> {
  let s: Session | null;
  try {
    s = await loadSession();
  } catch {
    return; // the page's own calls say what is wrong
  }
  if (!s || !session) return; // signed out: the page's next call shows the sign-in page
  const changed = s.tier !== session.tier || JSON.stringify(s.plan) !== JSON.stringify(session.plan);
  session = s;
  if (!changed) return;
  shell(s);
  sessionFresh = true;
  await route();
}

/** A part of the address as the page reads it; one with a broken escape
 * (a hand-edited or cut link: "%E0%A4%A") is taken as written, for its page
 * to say what it is not, rather than stop the route with a URIError. */
function decodePart(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

// The page last routed to, and the control that had the keyboard on it.
let lastPage = '';

async function route(): Promise<void> {
  if (!session) return;
  if (!sessionFresh) void refreshSession();
  sessionFresh = false;
  hideError();
  const hash = location.hash.replace(/^#\/?/, '');
  const [pathPart, query] = hash.split('?');
  const path = pathPart.split('/').filter(Boolean).map(decodePart);
  const page = path[0] || 'markets';
  // The window's title names the page (a screen reader announces it; tabs
  // and the history list pages by it): a market by its slug.
  const name = page === 'market' ? `${path[1] || 'Market'} · Markets` : (NAV.find(([r]) => r === page)?.[1] ?? 'Markets');
  document.title = `${name} · updown`;
  // A page that loads itself afresh for a control used on it (a filter, a
  // pager button, the exchange's coin) gives the keyboard back to that
  // control, where it would fall to the document and the next Tab start
  // at the top, through the navigation.
  const active = document.activeElement as HTMLElement | null;
  const refocus = page === lastPage && active && main.contains(active) ? active.dataset.testid : undefined;
  lastPage = page;
  for (const a of navLinks) {
    if (a.dataset.route === page || (page === 'market' && a.dataset.route === 'markets')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const t0 = performance.now();
  // Until the page shows its own content, it says it is loading (a page
  // that waits on the server first, the account's, would be blank).
  const box = h('div', { class: 'page' }, h('p', { class: 'muted', role: 'status', testid: 'page-loading' }, 'Loading…'));
  clear(main, box);
  main.removeAttribute('data-ready');
  main.removeAttribute('data-ready-ms');
  // The page is in the document: another page, or the sign-in page
  // (which replaces main itself), ends it.
  const current = () => box.isConnected;
  // A page the user has left (a replay or a job still running when they
  // moved on) no longer speaks: its late error would sit in the banner of
  // the page they are on now, and its readiness would mark that page ready.
  const ctx: Ctx = {
    session,
    checkoutURL,
    el: box,
    path,
    params: new URLSearchParams(query ?? ''),
    error: (e) => {
      if (current()) showError(e);
    },
    clearError: () => {
      if (current()) hideError();
    },
    ready: () => {
      if (!current()) return;
      main.setAttribute('data-ready-ms', (performance.now() - t0).toFixed(1));
      main.setAttribute('data-ready', page);
      if (refocus) {
        const el = box.querySelector<HTMLElement>(`[data-testid="${CSS.escape(refocus)}"]`);
        // A control now disabled (Older on the last page): the page itself, from which Tab goes on.
        (el && !(el as HTMLButtonElement).disabled ? el : main).focus();
      }
    },
    current,
  };
  const pages: Record<string, (c: Ctx) => Promise<void> | void> = {
    markets: marketsPage,
    market: marketPage,
    replay: replayPage,
    agent: agentPage,
    sweeps: sweepsPage,
    exchange: exchangePage,
    account: accountPage,
  };
  const f = pages[page] ?? marketsPage;
  try {
    await f(ctx);
  } catch (e) {
    // The banner says why; the page no longer says it is loading.
    box.querySelector('[data-testid=page-loading]')?.remove();
    ctx.error(e);
    ctx.ready();
  }
}

async function start(): Promise<void> {
  hideError();
  try {
    session = await loadSession();
  } catch (e) {
    // The session could not be checked (a spent minute's rate limit, the
    // service away): say so, and check again shortly, rather than leave
    // the page blank.
    clear(
      root,
      banner,
      h('main', { class: 'center', 'data-ready': 'unavailable' }, h('p', null, 'Your session cannot be checked right now; this page tries again every few seconds.')),
    );
    showError(e);
    setTimeout(() => void start().catch(showError), sessionRetryMs);
    return;
  }
  if (!session) return signInPage();
  // The checkout link only decorates upgrade links: fetched beside the page.
  get<{ data: { checkout_url: string | null } }>('/v1/account/billing')
    .then((b) => (checkoutURL = b.data.checkout_url))
    .catch(() => (checkoutURL = null));
  shell(session);
  sessionFresh = true;
  await route();
}

setUnauthorizedHandler((e) => signInPage(e.message));
window.addEventListener('hashchange', () => void route());
start().catch(showError);
