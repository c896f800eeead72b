import { ApiError, call, del, get, post, requestIdNote } from '../api';
import { DEFAULT_RULES, inSeconds, numberIn, strategyBuilder, unloadedCodeError } from '../builder';
import { chartWidth, COLORS, draw, numberTicks, uPlot } from '../chart';
import { type Ctx, denied, upgradeLink } from '../ctx';
import { clear, fig, field, h, holdFocus, labelCells, markInvalid, select, setChoice, td, th, unmarkInvalid } from '../dom';
import { loadDraft, saveDraft } from '../drafts';
import { fee, int, num, pct, plural, pnl, time, usd } from '../format';
import type { Rules } from '../strategy';
import { typesFollowCoin } from './markets';
import {
  ACTIVE,
  asRange,
  cellColor,
  cellInk,
  dsrWords,
  heatmap,
  OBJECTIVES,
  type Parameter,
  parseValues,
  pboWords,
  type Results,
  stabilityWords,
  STAT_WORDS,
  type Summary,
  type Sweep,
  type SweepRequest,
  sweepProblem,
  trialCount,
  type TrialResult,
  type Value,
  wonLost,
} from '../sweep';

const TYPES: [string, string][] = ['5m', '15m', '1hr', '4hr', '24hr'].map((t) => [t, t]);
const MAX_PARAMETERS = 4;
/** How often a running sweep is asked for its progress. */
const POLL_MS = 700;
/** Sweeps listed a page at a time (GET /v1/sweeps answers up to 100). */
const LIST_PAGE = 20;
/** Trials shown in the table at once (sorted first). */
const TRIAL_ROWS = 200;

/** The strategy's values a sweep can vary beyond its conditions' (DESIGN 14), with what each is. */
const PATHS: [string, string][] = [
  ['/positionSize', 'shares per trade'],
  ['/maxLossPercent', 'max loss %'],
  ['/latencyMs', 'latency (ms)'],
  ['/orderType', 'MARKET, LIMIT or GTC'],
  ['/side', 'UP or DOWN'],
  ['/feeModel', 'NONE, MARKET or CUSTOM'],
  ['/feeRate', 'custom fee rate'],
  ['/reentryCooldownMs', 're-entry cooldown (ms)'],
  ['/maxEntriesPerMarket', 'max entries per market'],
  ['/limitOffsetTicks', 'GTC offset (ticks)'],
  ['/cancelAfterMs', 'GTC cancel after (ms)'],
  ['/queueModel', 'RISK_AVERSE or FRONT'],
];

/** An objective's value as the page writes it: dollars for pnl, else a plain number. */
function objectiveText(objective: string, x: number | null | undefined): string {
  if (objective === 'total_pnl' || objective === 'ev_per_trade') return pnl(x);
  return num(x, objective === 'sqn' ? 2 : 3);
}

const valueText = (v: Value) => String(v);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ParamRow {
  el: HTMLElement;
  path: HTMLInputElement;
  mode: HTMLSelectElement;
  values: HTMLInputElement;
  from: HTMLInputElement;
  to: HTMLInputElement;
  step: HTMLInputElement;
  read(): Parameter;
}

export async function sweepsPage(ctx: Ctx): Promise<void> {
  if (!ctx.session.plan.backtest_ai) {
    clear(ctx.el, h('h1', null, 'Parameter sweeps'), denied(ctx, 'Parameter sweeps', 'PRO or ENTERPRISE', true));
    ctx.ready();
    return;
  }
  const b = strategyBuilder('sweep-strategy', () => suggest(), 'strategy_code (edit it, or paste one, to fill the builder)');
  const paths = h('datalist', { id: 'sweep-paths' });
  const params = h('div', { testid: 'sweep-params' });
  const addParam = h('button', { type: 'button', testid: 'sweep-add-param' }, '+ Parameter');
  const kind = select('sweep-search', [['GRID', 'GRID: every combination'], ['RANDOM', 'RANDOM: a seeded draw of combinations']], 'GRID');
  const trials = h('input', { type: 'number', min: '1', step: '1', value: '50', testid: 'sweep-random-trials' });
  const seed = h('input', { type: 'number', min: '0', step: '1', value: '1', testid: 'sweep-seed' });
  const coin = select('sweep-coin', [['BTC', 'BTC'], ['ETH', 'ETH'], ['SOL', 'SOL']], 'BTC');
  const mtype = select('sweep-type', TYPES, '15m');
  const followCoin = typesFollowCoin(coin, mtype);
  const count = h('input', { type: 'number', min: '1', step: '1', value: '50', testid: 'sweep-count' });
  const split = select(
    'sweep-split',
    [
      ['NONE', 'NONE: every market trains'],
      ['HOLDOUT', 'HOLDOUT: the newest markets test'],
      ['WALK_FORWARD', 'WALK_FORWARD: folds in time order'],
    ],
    'HOLDOUT',
  );
  const testFraction = h('input', { type: 'number', min: '0.1', max: '0.5', step: '0.05', value: '0.3', testid: 'sweep-test-fraction' });
  const folds = h('input', { type: 'number', min: '2', max: '10', step: '1', value: '3', testid: 'sweep-folds' });
  const embargo = h('input', { type: 'number', min: '0', step: '1', value: '1', testid: 'sweep-embargo' });
  const objective = select('sweep-objective', OBJECTIVES, 'total_pnl');
  const size = h('p', { class: 'muted', role: 'status', testid: 'sweep-replays' });
  const submit = h('button', { type: 'submit', testid: 'sweep-submit' }, 'Start sweep');
  const problem = h('div', { class: 'warning', role: 'alert', testid: 'sweep-error', hidden: true });
  const run = h('section', { 'aria-live': 'polite', testid: 'sweep-run' });
  const list = h('section', { testid: 'sweeps-list', 'aria-label': 'Your sweeps' });

  const randomBox = h('div', { class: 'row' }, field('Trials to draw', trials, 'Distinct combinations, drawn with the seed.'), field('Seed', seed, 'The same seed draws the same trials.'));
  const fractionBox = field('Test fraction', testFraction, 'The newest share of the markets that test, 0.1 to 0.5.');
  const foldsBox = field('Folds', folds, '2 to 10: fold k trains on the blocks before block k and tests on it.');
  const embargoBox = field('Embargo (markets)', embargo, 'Markets dropped between train and test, so that one cannot leak into the other.');
  const rows: ParamRow[] = [];

  // The parameters a user may pick: the strategy's conditions' values by
  // what they say, then its other numbers and choices.
  function suggest(): void {
    const r = b.rules();
    const cond = (which: string, list: { field: string; operator: string; value: number }[], word: string) =>
      list.map((c, i) => h('option', { value: `/${which}/${i}/value` }, `${word} ${i + 1}: ${c.field} ${c.operator} ${c.value}`));
    clear(paths, cond('entryConditions', r.entryConditions, 'entry'), cond('exitConditions', r.exitConditions, 'exit'), PATHS.map(([v, t]) => h('option', { value: v }, t)));
    showSize();
  }

  function paramRow(p: Parameter): ParamRow {
    const path = h('input', { type: 'text', name: 'path', list: 'sweep-paths', value: p.path, size: 26, 'aria-label': 'Parameter (a JSON Pointer into the strategy)', spellcheck: 'false' });
    const mode = select('', [['range', 'from / to / step'], ['values', 'values']], p.values ? 'values' : 'range', { name: 'mode', 'aria-label': 'Given as' });
    const values = h('input', { type: 'text', name: 'values', value: (p.values ?? []).map(valueText).join(', '), size: 22, 'aria-label': 'Values, separated by commas', placeholder: '0.3, 0.4, 0.5 or MARKET, LIMIT' });
    const box = (name: string, label: string, v?: number) => h('input', { type: 'number', step: 'any', name, value: v === undefined ? '' : String(v), 'aria-label': label });
    const from = box('from', 'From', p.range?.from);
    const to = box('to', 'To', p.range?.to);
    const step = box('step', 'Step', p.range?.step);
    const rangeBox = h('span', { class: 'range' }, from, h('span', { 'aria-hidden': 'true' }, ' to '), to, h('span', { 'aria-hidden': 'true' }, ' step '), step);
    const rm = h('button', { type: 'button', class: 'link', 'aria-label': 'Remove this parameter' }, 'Remove');
    const el = h('div', { class: 'cond param', testid: 'sweep-param' }, path, mode, values, rangeBox);
    el.append(rm);
    const show = () => {
      values.hidden = mode.value !== 'values';
      rangeBox.hidden = mode.value !== 'range';
    };
    show();
    const row: ParamRow = {
      el,
      path,
      mode,
      values,
      from,
      to,
      step,
      read: () =>
        mode.value === 'values'
          ? { path: path.value.trim(), values: parseValues(values.value) }
          : // An empty box is null in the body, which the API names as missing (never a step of 0).
            { path: path.value.trim(), range: { from: numberIn(from), to: numberIn(to), step: numberIn(step) } },
    };
    for (const x of [path, mode, values, from, to, step]) x.addEventListener('input', () => (show(), showSize()));
    rm.addEventListener('click', () => {
      // The keyboard stays in the list, as in the builder's conditions: on
      // the Remove of the parameter now in this one's place, else of the one
      // before, else on "+ Parameter".
      const had = el.contains(document.activeElement);
      const i = rows.indexOf(row);
      rows.splice(i, 1);
      el.remove();
      addParam.disabled = rows.length >= MAX_PARAMETERS;
      showSize();
      if (had) ((rows[i] ?? rows[i - 1])?.el.querySelector<HTMLElement>('button') ?? addParam).focus();
    });
    return row;
  }
  const add = (p: Parameter) => {
    const r = paramRow(p);
    rows.push(r);
    params.append(r.el);
    addParam.disabled = rows.length >= MAX_PARAMETERS;
  };
  addParam.addEventListener('click', () => {
    add({ path: '', range: { from: 0, to: 0, step: 1 } });
    rows[rows.length - 1].path.focus();
    showSize();
  });

  const showSplit = () => {
    randomBox.hidden = kind.value !== 'RANDOM';
    fractionBox.hidden = split.value !== 'HOLDOUT';
    foldsBox.hidden = split.value !== 'WALK_FORWARD';
    embargoBox.hidden = split.value === 'NONE';
  };
  const body = (): SweepRequest => {
    const s: SweepRequest['split'] = { kind: split.value };
    if (split.value === 'HOLDOUT') s.testFraction = numberIn(testFraction);
    if (split.value === 'WALK_FORWARD') s.folds = numberIn(folds);
    if (split.value !== 'NONE') s.embargoMarkets = numberIn(embargo);
    const search: SweepRequest['search'] = { kind: kind.value };
    if (kind.value === 'RANDOM') {
      search.trials = numberIn(trials);
      search.seed = numberIn(seed);
    }
    return {
      strategy: { ...b.rules() },
      parameters: rows.map((r) => r.read()),
      search,
      markets: { coin: coin.value, market_type: mtype.value, count: numberIn(count) },
      split: s,
      objective: objective.value,
    };
  };
  function showSize(): void {
    const r = body();
    const n = trialCount(r.parameters, r.search);
    const m = Number(count.value) || 0;
    // The limits of the plan signed in, as the API gives them (GET /v1/auth/session).
    const lim = ctx.session.plan.sweeps;
    const plan = lim
      ? ` Your plan, ${ctx.session.tier}, runs up to ${int(lim.max_trials)} trials, ${int(lim.max_markets)} markets and ${int(lim.max_replays)} replays a sweep, ${lim.concurrent === 1 ? 'one' : int(lim.concurrent)} at a time.`
      : '';
    size.textContent = `${plural(n, 'trial')} × up to ${plural(m, 'market')} = up to ${plural(n * m, 'replay')}.${plan}`;
  }
  for (const x of [kind, trials, seed, coin, mtype, count, split, testFraction, folds, embargo, objective]) x.addEventListener('input', () => (showSplit(), showSize()));

  // Fills the form from a sweep's request (a sweep opened from the list).
  const fill = (r: SweepRequest) => {
    b.load(r.strategy as unknown as Rules);
    rows.splice(0).forEach((x) => x.el.remove());
    r.parameters.map(asRange).forEach(add);
    setChoice(kind, r.search.kind);
    if (r.search.trials) trials.value = String(r.search.trials);
    if (r.search.seed !== undefined) seed.value = String(r.search.seed);
    setChoice(coin, r.markets.coin);
    followCoin();
    setChoice(mtype, r.markets.market_type);
    count.value = String(r.markets.count);
    setChoice(split, r.split.kind);
    if (r.split.testFraction) testFraction.value = String(r.split.testFraction);
    if (r.split.folds) folds.value = String(r.split.folds);
    if (r.split.embargoMarkets !== undefined) embargo.value = String(r.split.embargoMarkets);
    setChoice(objective, r.objective || 'total_pnl');
    showSplit();
    showSize();
  };

  // The control the API's field names, for marking it.
  const controlOf = (f: string): HTMLElement | null => {
    const m = /^parameters\[(\d+)\](?:\.(\w+))?(?:\.(\w+))?/.exec(f);
    if (m) {
      const r = rows[Number(m[1])];
      if (!r) return params;
      const part = m[3] ?? m[2];
      return part === 'values' ? r.values : part === 'from' ? r.from : part === 'to' ? r.to : part === 'step' ? r.step : part === 'range' ? r.from : r.path;
    }
    const map: Record<string, HTMLElement> = {
      parameters: rows[0]?.path ?? addParam,
      'search.kind': kind,
      'search.trials': trials,
      'search.seed': seed,
      'markets.coin': coin,
      'markets.market_type': mtype,
      'markets.count': count,
      'split.kind': split,
      'split.testFraction': testFraction,
      'split.folds': folds,
      'split.embargoMarkets': embargo,
      objective,
    };
    if (map[f]) return map[f];
    // A strategy's field is its builder's control (the cooldown box, the
    // size), where every one marked the code box; the code box otherwise.
    const own = f.startsWith('strategy.') ? b.controlOf(f.slice('strategy.'.length)) : null;
    if (own) return own;
    if (f === 'strategy' || f.startsWith('strategy.')) return b.code.querySelector('textarea');
    return null;
  };
  const missing = (): string | null => {
    const boxes: [string, HTMLInputElement, boolean][] = [
      ['search.seed', seed, kind.value === 'RANDOM'],
      ['split.testFraction', testFraction, split.value === 'HOLDOUT'],
      ['split.folds', folds, split.value === 'WALK_FORWARD'],
      ['split.embargoMarkets', embargo, split.value !== 'NONE'],
    ];
    return boxes.find(([, box, shown]) => shown && box.value.trim() === '')?.[0] ?? null;
  };
  const showProblem = (refused: unknown) => {
    const e = inSeconds(refused);
    if (!(e instanceof ApiError)) return ctx.error(e);
    const p = sweepProblem(e.status, e.code, e.message, e.details);
    clear(problem, h('p', null, p.text + requestIdNote(e)), p.plan ? upgradeLink(ctx) : null);
    problem.hidden = false;
    problem.setAttribute('data-status', String(e.status));
    if (p.field) {
      const c = controlOf(p.field);
      if (c) {
        problem.setAttribute('data-field', p.field);
        markInvalid(c);
      }
    }
  };

  // One sweep shown at a time; a newer one (or leaving the page) stops the old one's polling.
  let shown = 0;
  const follow = async (sw: Sweep) => {
    const me = ++shown;
    const live = () => me === shown && ctx.current();
    const view = sweepView(run, sw, async () => {
      try {
        const r = await del<{ data: Sweep }>(`/v1/sweeps/${encodeURIComponent(sw.sweep_id)}`);
        view.update(r.data);
      } catch (e) {
        ctx.error(e);
      }
    });
    let pause = 0; // a refused poll's Retry-After
    while (live() && ACTIVE.includes(sw.status)) {
      await sleep(Math.max(POLL_MS, pause));
      pause = 0;
      if (!live()) return;
      try {
        sw = (await get<{ data: Sweep }>(`/v1/sweeps/${encodeURIComponent(sw.sweep_id)}`)).data;
      } catch (e) {
        // Signed out (401): the sign-in page has taken the screen.
        if (e instanceof ApiError && e.status === 401) return;
        if (!(e instanceof ApiError) || e.status === 404 || e.status === 403) {
          ctx.error(e);
          return;
        }
        // A busy or failing server (429, 5xx, the network): asked again,
        // and the status line says so meanwhile, rather than "Running"
        // over a progress bar that no longer moves. The next poll waits
        // as long as a 429's (or 503's) Retry-After asks (SPEC 7).
        view.trouble(e);
        pause = e.retryAfterMs;
        continue;
      }
      if (!live()) return;
      view.update(sw);
    }
    if (live()) void showList();
  };

  // The list a page at a time (GET /v1/sweeps pages with limit and
  // offset), newest first; the page shown is kept while the list refreshes
  // (a sweep followed to its end), and only the latest answer is drawn.
  let listOffset = 0;
  let listShown = 0; // the offset of the page on the screen
  let listAsked = 0;
  const showList = async (offset = listOffset): Promise<void> => {
    const me = ++listAsked;
    listOffset = offset;
    try {
      const page = (o: number) => get<{ data: { sweeps: Sweep[]; total: number } }>(`/v1/sweeps?limit=${LIST_PAGE}&offset=${o}`);
      let r = await page(offset);
      // A page past the last (its older sweeps expired meanwhile): the last page instead.
      if (r.data.sweeps.length === 0 && r.data.total > 0 && offset > 0) {
        offset = Math.floor((r.data.total - 1) / LIST_PAGE) * LIST_PAGE;
        r = await page(offset);
      }
      if (me !== listAsked) return;
      listOffset = listShown = offset;
      sweepList(list, r.data.sweeps, r.data.total, offset, (o) => void showList(o));
    } catch (e) {
      if (me !== listAsked) return;
      // The page shown stays (Newer and Older still page from it), with
      // what went wrong and a retry of the page that was asked for.
      const asked = offset;
      listOffset = listShown;
      listTrouble(list, e, asked > listShown ? 'sweeps-older' : 'sweeps-newer', () => void showList(asked));
    }
  };

  const form = h(
    'form',
    // novalidate: the API judges every value and its message is shown.
    { class: 'builder', 'aria-label': 'Sweep builder', novalidate: true, testid: 'sweep-form' },
    h(
      'fieldset',
      null,
      h('legend', null, 'Strategy'),
      h('div', { class: 'row' }, field('Side', b.side)),
      b.entries,
      b.exits,
      b.sizes,
      b.exec,
      b.code,
      b.codeStatus,
    ),
    h(
      'fieldset',
      null,
      h('legend', null, 'Parameters to sweep (1 to 4)'),
      h('p', { class: 'muted' }, 'Each is a JSON Pointer to a value of the strategy above, such as /entryConditions/0/value (the first entry condition’s number), with a range or a list of values.'),
      paths,
      params,
      addParam,
    ),
    h(
      'fieldset',
      null,
      h('legend', null, 'Search, markets and split'),
      h('div', { class: 'row' }, field('Search', kind), randomBox),
      h('div', { class: 'row' }, field('Coin', coin), field('Market type', mtype), field('Markets', count, 'The newest resolved markets of your plan’s window, oldest first.')),
      h('div', { class: 'row' }, field('Split', split, 'Train markets choose the best trial; test markets, which it never saw, judge it.'), fractionBox, foldsBox, embargoBox),
      h('div', { class: 'row' }, field('Objective', objective, 'What “best” means: the train markets’ value of this.')),
    ),
    size,
    problem,
    submit,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    ctx.clearError();
    problem.hidden = true;
    unmarkInvalid(ctx.el);
    // An empty box the API would take as 0 (folds) or as its default
    // (testFraction, embargoMarkets, seed) is named here as missing.
    // A code the builder could not take: no sweep starts, where the
    // builder's earlier strategy was swept under it.
    const unloaded = b.unloadedCode();
    if (unloaded) {
      showProblem(new ApiError(400, 'VALIDATION_ERROR', unloadedCodeError(unloaded).message));
      markInvalid(b.code.querySelector('textarea') as HTMLElement);
      return;
    }
    const empty = missing();
    if (empty) {
      showProblem(new ApiError(400, 'VALIDATION_ERROR', `${empty} is missing: give a number`, { field: empty }));
      return;
    }
    const back = holdFocus(submit);
    submit.disabled = true;
    submit.textContent = 'Starting…';
    try {
      const r = await post<{ data: Sweep }>('/v1/sweeps', body());
      // The address names the sweep (without a new page load), so a reload shows it again.
      history.replaceState(null, '', `#/sweeps/${encodeURIComponent(r.data.sweep_id)}`);
      void showList(0); // the first page, where the new sweep is
      void follow(r.data);
    } catch (e) {
      showProblem(e);
      // "See Your sweeps below": the list shows the sweep that holds the
      // slot, which may have been started since the page loaded (by the API).
      if (e instanceof ApiError && e.status === 429) void showList(0);
    } finally {
      submit.disabled = false;
      submit.textContent = 'Start sweep';
      back();
    }
  });

  clear(
    ctx.el,
    h('h1', null, 'Parameter sweeps'),
    h(
      'p',
      { class: 'muted' },
      'Run one strategy over a grid of its parameters across many resolved markets, on every worker, and see whether the best setting is an edge or the luck of trying many.',
    ),
    form,
    run,
    list,
  );
  const id = ctx.path[1];
  // The sweep being set up outlives a visit to another page; a sweep's own
  // page (#/sweeps/{id}) shows its request instead.
  const customer = ctx.session.customer_id;
  const draft = id ? null : loadDraft<SweepRequest>(customer, 'sweeps');
  const defaults = () => {
    b.load(DEFAULT_RULES);
    rows.splice(0).forEach((x) => x.el.remove());
    add({ path: '/entryConditions/0/value', range: { from: 0.35, to: 0.5, step: 0.05 } });
    add({ path: '/exitConditions/0/value', range: { from: 0.55, to: 0.7, step: 0.05 } });
    showSplit();
    suggest();
  };
  defaults();
  if (draft) {
    try {
      fill(draft);
      suggest();
    } catch {
      defaults(); // a draft of another version of the page
    }
  }
  const keep = () => saveDraft(customer, 'sweeps', body());
  // Typing, choosing, and the buttons that add or remove a condition or a parameter.
  for (const ev of ['input', 'change', 'click']) form.addEventListener(ev, keep);
  await Promise.all([
    showList(),
    (async () => {
      if (!id) return;
      try {
        const sw = (await get<{ data: Sweep }>(`/v1/sweeps/${encodeURIComponent(id)}`)).data;
        if (sw.request) fill(sw.request);
        void follow(sw);
      } catch (e) {
        ctx.error(e);
      }
    })(),
  ]);
  ctx.ready();
}

/** A page of the caller's sweeps, newest first, each a link to its page,
 * with Newer and Older to page through the rest. */
function sweepList(box: HTMLElement, sweeps: Sweep[], total: number, offset: number, goTo: (offset: number) => void): void {
  // The pager button in use keeps the keyboard across the redraw (or, on
  // the first or last page, where it is disabled, the other one).
  // A retry of a page that failed stands for the pager button that asked for it.
  const active = box.contains(document.activeElement) ? (document.activeElement as HTMLElement) : undefined;
  const focused = active?.dataset.pager ?? active?.dataset.testid;
  if (sweeps.length === 0) {
    clear(box, h('h2', null, 'Your sweeps'), h('p', { class: 'muted', testid: 'sweeps-empty' }, 'No sweeps yet.'));
    return;
  }
  const first = offset + 1;
  const last = offset + sweeps.length;
  const table = h(
    'table',
    { class: 'data cards' },
    h(
      'caption',
      null,
      total > sweeps.length ? `Sweeps ${int(first)}–${int(last)} of ${int(total)}, newest first` : `${int(total)} ${total === 1 ? 'sweep' : 'sweeps'}, newest first`,
    ),
    h('thead', null, h('tr', null, th('Sweep'), th('Started (UTC)'), th('Status'), th('Trials', true), th('Markets', true), th('Replays done', true))),
    h(
      'tbody',
      null,
      sweeps.map((s) =>
        h(
          'tr',
          { testid: 'sweep-row', 'data-id': s.sweep_id, 'data-status': s.status },
          h('td', { class: 'slug' }, h('a', { href: `#/sweeps/${encodeURIComponent(s.sweep_id)}` }, s.sweep_id)),
          h('td', { class: 'time wide' }, time(s.created_at)),
          td(s.status),
          td(int(s.trials), true),
          td(int(s.markets), true),
          td(`${int(s.progress.replays_done)} of ${int(s.progress.replays_total)}`, true),
        ),
      ),
    ),
  );
  labelCells(table);
  let pager: HTMLElement | null = null;
  if (total > sweeps.length || offset > 0) {
    const newer = h('button', { type: 'button', testid: 'sweeps-newer', disabled: offset === 0 }, '← Newer');
    const older = h('button', { type: 'button', testid: 'sweeps-older', disabled: last >= total }, 'Older →');
    newer.addEventListener('click', () => goTo(Math.max(0, offset - LIST_PAGE)));
    older.addEventListener('click', () => goTo(offset + LIST_PAGE));
    pager = h('div', { class: 'pager', role: 'navigation', 'aria-label': 'Pages of your sweeps' }, newer, h('span', { testid: 'sweeps-range' }, `${int(first)}–${int(last)} of ${int(total)}`), older);
  }
  clear(box, h('h2', null, 'Your sweeps'), table, pager);
  if (focused === 'sweeps-newer' || focused === 'sweeps-older') {
    const buttons = [...box.querySelectorAll<HTMLButtonElement>('.pager button')];
    const same = buttons.find((b) => b.dataset.testid === focused && !b.disabled);
    (same ?? buttons.find((b) => !b.disabled))?.focus();
  }
}

/** A page of the list that could not be loaded: the page shown (if any)
 * stays, with the error above it and a button that asks again. pager
 * names the pager button the keyboard goes to when the retry's page is
 * drawn. */
function listTrouble(box: HTMLElement, e: unknown, pager: string, retry: () => void): void {
  const hadRetry = document.activeElement instanceof HTMLElement && document.activeElement.dataset.testid === 'sweeps-retry' && box.contains(document.activeElement);
  box.querySelector('[data-testid=sweeps-error]')?.remove();
  // As the page's error banner says an error: the message, its code and a 5xx's request id.
  const text = e instanceof ApiError ? `${e.message}${e.code && e.status ? ` (${e.code})` : ''}.${requestIdNote(e)}` : `${(e as Error).message}.`;
  const again = h('button', { type: 'button', testid: 'sweeps-retry', 'data-pager': pager }, 'Try again');
  again.addEventListener('click', retry);
  const problem = h('div', { class: 'warning', role: 'alert', testid: 'sweeps-error' }, h('p', null, `Your sweeps could not be loaded: ${text} `, again));
  const heading = box.querySelector('h2');
  if (heading && box.querySelector('table')) heading.after(problem);
  else clear(box, h('h2', null, 'Your sweeps'), problem);
  if (hadRetry) again.focus();
}

interface SweepView {
  update(sw: Sweep): void;
  /** A poll of the sweep's progress that failed (it is asked again). */
  trouble(e: ApiError): void;
}

const STATUS_WORDS: Record<string, string> = {
  QUEUED: 'Queued: waiting for a worker.',
  RUNNING: 'Running on the workers.',
  DONE: 'Done.',
  FAILED: 'Failed.',
  CANCELLED: 'Cancelled.',
};

/** A sweep's progress bar, cancel button and, when it is done, its results. */
function sweepView(box: HTMLElement, sw: Sweep, cancel: () => Promise<void>): SweepView {
  const bar = h('progress', { max: '1', value: '0', 'aria-label': 'Replays done' });
  const text = h('span', { testid: 'sweep-progress-text' });
  const progress = h('div', { class: 'progress', testid: 'sweep-progress' }, bar, ' ', text);
  const stop = h('button', { type: 'button', testid: 'sweep-cancel' }, 'Cancel sweep');
  const status = h('p', { testid: 'sweep-status', role: 'status', tabindex: '-1' });
  const results = h('div', { testid: 'sweep-results' });
  stop.addEventListener('click', async () => {
    // Cancelled, the button goes: the keyboard goes to the status line that says so.
    const back = holdFocus(stop, () => status);
    stop.disabled = true;
    await cancel();
    // A cancelled sweep hides the button; one the API did not cancel (its
    // error in the banner) leaves it to be clicked again.
    stop.disabled = false;
    back();
  });
  let last = '';
  const update = (s: Sweep) => {
    const { replays_done: done, replays_total: total, eta_seconds: eta } = s.progress;
    bar.max = Math.max(total, 1);
    bar.value = done;
    const share = total > 0 ? (100 * done) / total : 0;
    text.textContent = `${int(done)} of ${plural(total, 'replay')} (${pct(share, 0)})${eta !== null && ACTIVE.includes(s.status) ? `, about ${eta < 60 ? `${Math.max(1, Math.round(eta))} s` : `${Math.round(eta / 60)} min`} left` : ''}`;
    progress.setAttribute('data-status', s.status);
    progress.setAttribute('data-done', String(done));
    progress.setAttribute('data-total', String(total));
    progress.setAttribute('data-percent', share.toFixed(1));
    status.textContent = `${STATUS_WORDS[s.status] ?? s.status}${s.error ? ` ${s.error}` : ''}`;
    status.className = s.status === 'FAILED' ? 'warning' : 'muted';
    status.removeAttribute('data-trouble');
    stop.hidden = !ACTIVE.includes(s.status);
    if (s.status !== last && s.status === 'DONE' && s.results) showResults(results, s);
    last = s.status;
  };
  const trouble = (e: ApiError) => {
    status.textContent = `Its progress could not be read: ${e.message}${e.code ? ` (${e.code})` : ''}. Asking again…`;
    status.className = 'warning';
    status.setAttribute('data-trouble', String(e.status));
  };
  clear(
    box,
    h('h2', null, `Sweep ${sw.sweep_id}`),
    h('p', { class: 'muted' }, `${plural(sw.trials, 'trial')} × ${plural(sw.markets, 'market')} = ${plural(sw.replays, 'replay')}, started ${time(sw.created_at)} UTC.`),
    h('div', { class: 'row' }, progress, stop),
    status,
    results,
  );
  update(sw);
  return { update, trouble };
}

/** A WALK_FORWARD sweep: a trial's test figures are its last fold's block, and best.test joins every fold's chosen trial's. */
const walkForward = (res: Results) => res.split === 'WALK_FORWARD';

/** A finished sweep: the verdict, the heatmaps, the best trial, its statistics and every trial. */
function showResults(box: HTMLElement, sw: Sweep): void {
  const res = sw.results as Results;
  const obj = res.objective;
  const objName = OBJECTIVES.find(([k]) => k === obj)?.[1] ?? obj;
  const fmt = (x: number | null | undefined) => objectiveText(obj, x);
  const best = res.best;
  const bestTrial = best ? res.trials.find((t) => t.trial === best.trial) : undefined;
  const hasTest = res.split !== 'NONE';

  const verdict = h(
    'section',
    { testid: 'sweep-verdict', 'aria-label': 'Verdict' },
    h('h3', null, 'Edge or luck?'),
    h(
      'dl',
      { class: 'figures' },
      fig('DSR (deflated Sharpe ratio)', num(res.dsr, 3), 'sweep-dsr'),
      fig('PBO (probability of overfitting)', num(res.pbo, 3), 'sweep-pbo'),
      fig('Trials', int(res.trials.length)),
    ),
    h('p', { testid: 'sweep-dsr-words' }, h('strong', null, 'DSR. '), dsrWords(res.dsr, res.trials.length, bestTrial?.train.n_markets_traded)),
    h('p', { testid: 'sweep-pbo-words' }, h('strong', null, 'PBO. '), pboWords(res.pbo, res.pbo_choices)),
    h('p', { testid: 'sweep-stability-words' }, h('strong', null, 'Stability. '), stabilityWords(res.stability, fmt)),
  );

  clear(
    box,
    verdict,
    heatmapSection(res, sw.request?.parameters ?? [], fmt, objName, hasTest),
    best ? bestSection(res, best, fmt, objName, hasTest) : h('p', { class: 'warning' }, `No trial has a defined ${objName} on the train markets: no best trial to show.`),
    res.folds?.length ? foldsSection(res, fmt) : null,
    bestTrial ? statsSection(bestTrial.train, best?.test ?? null, hasTest, res.split) : null,
    trialsSection(sw.sweep_id, res, fmt, objName, hasTest),
  );
  drawBestChart(box, res);
}

/** The heatmap of the objective over two parameters (picked when there are more), train beside test. */
function heatmapSection(res: Results, grid: Parameter[], fmt: (x: number | null) => string, objName: string, hasTest: boolean): HTMLElement {
  const paths = res.trials[0]?.parameters.map((p) => p.path) ?? [];
  const opts = paths.map((p): [string, string] => [p, p]);
  const xSel = select('heatmap-x', opts, paths[0]);
  const ySel = select('heatmap-y', opts, paths[1] ?? paths[0]);
  const maps = h('div', { class: 'heatmaps' });
  const note = h('p', { class: 'muted chart-note' });
  const one = (title: string, key: 'train_objective' | 'test_objective', testid: string) => {
    const g = heatmap(res.trials, xSel.value, ySel.value, key, grid);
    const single = xSel.value === ySel.value;
    const table = h(
      'table',
      { class: 'heatmap', testid, 'data-x': xSel.value, 'data-y': single ? '' : ySel.value },
      h('caption', null, title),
      h('thead', null, h('tr', null, h('th', { scope: 'col', class: 'corner' }, single ? '' : 'down ↓ across →'), g.xs.map((x) => h('th', { scope: 'col' }, valueText(x))))),
      h(
        'tbody',
        null,
        g.rows.map((row, j) =>
          h(
            'tr',
            null,
            h('th', { scope: 'row' }, single ? objName : valueText(g.ys[j])),
            row.map((c) =>
              h(
                'td',
                {
                  testid: 'heatmap-cell',
                  'data-x': valueText(c.x),
                  'data-y': single ? '' : valueText(c.y),
                  'data-trial': c.trial ?? '',
                  'data-value': c.value ?? '',
                  class: c.trial !== null && c.trial === res.best?.trial ? 'best' : null,
                  title: `${xSel.value} = ${valueText(c.x)}${single ? '' : `, ${ySel.value} = ${valueText(c.y)}`}: ${fmt(c.value)}${c.trial !== null ? ` (trial ${c.trial})` : ''}`,
                },
                fmt(c.value),
              ),
            ),
          ),
        ),
      ),
    );
    // Colours through the CSSOM: the page's CSP refuses style attributes.
    table.querySelectorAll('td').forEach((cell, k) => {
      const c = g.rows[Math.floor(k / g.xs.length)][k % g.xs.length];
      cell.style.backgroundColor = cellColor(c.value, g.maxAbs);
      cell.style.color = cellInk(c.value, g.maxAbs);
    });
    return { table, many: g.rows.some((r) => r.some((c) => c.trials > 1)) };
  };
  const render = () => {
    // Each cell is a trial's objective on the markets it trained on, where
    // the best trial is picked: every market under split NONE, the last
    // fold's train markets under WALK_FORWARD.
    const trainOn = res.split === 'NONE' ? 'every market' : walkForward(res) ? 'the last fold’s train markets' : 'the train markets';
    const train = one(`Train: each trial’s ${objName} on ${trainOn}, where the best trial is picked`, 'train_objective', 'heatmap-train');
    // A trial's test figures under WALK_FORWARD are the last fold's block
    // only (the earlier blocks train in the later folds).
    const testTitle = walkForward(res)
      ? `Test: each trial’s ${objName} on the last fold’s test block, markets it never saw`
      : `Test: each trial’s ${objName} on the test markets, which it never saw`;
    const test = hasTest ? one(testTitle, 'test_objective', 'heatmap-test') : null;
    // Each map scrolls sideways on its own when it is wider than the screen.
    const wrap = (t: HTMLElement) => h('div', { class: 'heatmap-box' }, t);
    clear(maps, wrap(train.table), test ? wrap(test.table) : h('p', { class: 'muted' }, 'Split NONE: every market trains, so there is no test map.'));
    note.textContent =
      'Green made money, red lost it, stronger with size (each map on its own scale); the outlined cell is the best trial on train.' +
      (train.many ? ' Other parameters vary too: each cell shows the trial best on train with its pair, on the test map too (a cell is never chosen by its test result).' : '');
  };
  xSel.addEventListener('input', render);
  ySel.addEventListener('input', render);
  render();
  return h(
    'section',
    { testid: 'sweep-heatmap', 'aria-label': 'Heatmap' },
    h('h3', null, `${objName} over the parameters`),
    paths.length > 1 ? h('div', { class: 'row' }, field('Across (x)', xSel), field('Down (y)', ySel)) : h('p', { class: 'muted' }, `Across: ${paths[0] ?? ''}`),
    maps,
    note,
  );
}

/** The best trial: its parameters, its objective on train and test, and its pnl market by market. */
function bestSection(res: Results, best: NonNullable<Results['best']>, fmt: (x: number | null) => string, objName: string, hasTest: boolean): HTMLElement {
  const obj = res.objective;
  const train = res.trials.find((t) => t.trial === best.trial)?.train;
  const [won, lost] = wonLost(best.per_market);
  // Under WALK_FORWARD a test market's pnl is the trial's its fold chose
  // (the walk forward's out-of-sample path), not the best trial's.
  const wf = walkForward(res);
  const joined = wf ? ', folds joined' : '';
  const traded = (m: (typeof best.per_market)[number]) => (m.test ? (m.trial === undefined || m.trial === null ? 'none' : int(m.trial)) : int(best.trial));
  const rows = best.per_market.map((m, i) =>
    h(
      'tr',
      { testid: 'best-market-row', 'data-slug': m.slug },
      td(int(i + 1), true),
      h('td', { class: 'slug' }, h('a', { href: `#/market/${encodeURIComponent(m.slug)}` }, m.slug)),
      td(m.test ? 'test' : m.embargo ? 'embargo' : 'train'),
      wf ? h('td', { class: 'num', testid: 'best-market-trial' }, traded(m)) : null,
      td(pnl(m.pnl), true),
      td(m.error ?? ''),
    ),
  );
  const table = h(
    'table',
    { class: 'data cards', testid: 'best-markets' },
    h('caption', null, wf ? 'Per market, oldest first: a test market is traded by the trial its fold chose' : 'Per market, oldest first'),
    h('thead', null, h('tr', null, th('#', true), th('Market'), th('Set'), wf ? th('Trial', true) : null, th('Pnl', true), th('Error'))),
    h('tbody', null, rows),
  );
  labelCells(table);
  return h(
    'section',
    { testid: 'sweep-best', 'aria-label': 'Best trial' },
    h('h3', null, `Best trial: ${best.trial}`),
    h(
      'dl',
      { class: 'figures', testid: 'best-figures' },
      best.parameters.map((p) => fig(p.path, valueText(p.value), 'best-param')),
      fig(`Train ${objName}`, fmt(best.train_objective), 'best-train-objective'),
      hasTest ? fig(`Test ${objName}${joined}`, fmt(best.test_objective), 'best-test-objective') : null,
      obj === 'total_pnl' ? null : fig('Train total pnl', pnl(train?.total_pnl), 'best-train-pnl'),
      obj !== 'total_pnl' && hasTest ? fig(`Test total pnl${joined}`, pnl(best.test?.total_pnl), 'best-test-pnl') : null,
      fig(`Trades, train / test${joined}`, `${int(train?.n_trades)} / ${hasTest ? int(best.test?.n_trades) : '—'}`, 'best-trades'),
      fig('Markets won / lost', `${int(won)} / ${int(lost)}`, 'best-won-lost'),
    ),
    wf
      ? h(
          'p',
          { class: 'muted', testid: 'best-walk-forward' },
          `Walk forward: the train markets are the best trial’s; each test block is traded by the trial its fold chose on the markets before it (see the folds below), so the test figures and bars are those trials’, joined.`,
        )
      : null,
    h('div', {
      class: 'chart',
      testid: 'sweep-best-chart',
      role: 'img',
      'aria-label': wf
        ? 'Pnl per market, oldest first: train markets (the best trial’s) blue, test markets (each fold’s chosen trial’s) orange'
        : 'The best trial’s pnl per market, oldest first: test markets orange, the others (train, embargo) blue',
    }),
    h('details', null, h('summary', null, `${wf ? 'The' : 'Its'} pnl in ${best.per_market.length === 1 ? 'its one market' : `each of the ${int(best.per_market.length)} markets`}`), table),
  );
}

function drawBestChart(box: HTMLElement, res: Results): void {
  const el = box.querySelector('[data-testid=sweep-best-chart]') as HTMLElement | null;
  const ms = res.best?.per_market ?? [];
  if (!el || ms.length === 0) return;
  const n = ms.length;
  const xs = ms.map((_, i) => i + 1);
  const bars = uPlot.paths.bars!({ size: [0.7, 48], align: 0 });
  draw(
    el,
    {
      width: chartWidth(box),
      height: 220,
      scales: { x: { time: false, range: [0.5, n + 0.5] }, y: { range: (_u, lo, hi) => [Math.min(0, lo) * 1.1, Math.max(0, hi) * 1.1 || 1] } },
      axes: [
        { label: 'market (1 = oldest)', incrs: [1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000], values: (_u, vals) => vals.map((v) => (Number.isInteger(v) && v >= 1 && v <= n ? String(v) : '')) },
        { label: 'pnl ($)', size: 64, values: numberTicks() },
      ],
      series: [
        { label: 'market', value: (_u, v) => (v === null ? '—' : `${v}: ${ms[v - 1]?.slug ?? ''}${ms[v - 1]?.error ? ` (no result: ${ms[v - 1].error})` : ''}`) },
        { label: 'train', stroke: COLORS.coin, fill: 'rgba(9,105,218,0.5)', paths: bars, points: { show: false }, value: (_u, v) => pnl(v) },
        { label: 'test', stroke: COLORS.spread, fill: 'rgba(154,103,0,0.55)', paths: bars, points: { show: false }, value: (_u, v) => pnl(v) },
        { label: 'embargo (neither)', stroke: '#8c959f', fill: 'rgba(140,149,159,0.45)', paths: bars, points: { show: false }, value: (_u, v) => pnl(v) },
      ],
    },
    // A market that could not be replayed (NO_DATA) has no pnl, not one of
    // $0: no bar, as on the agent's chart.
    [
      xs,
      ms.map((m) => (m.test || m.embargo || m.error ? null : m.pnl)),
      ms.map((m) => (m.test && !m.error ? m.pnl : null)),
      ms.map((m) => (m.embargo && !m.error ? m.pnl : null)),
    ],
  );
}

/** WALK_FORWARD: the trial each fold chose and how it did on its test block. */
function foldsSection(res: Results, fmt: (x: number | null) => string): HTMLElement {
  const table = h(
    'table',
    { class: 'data cards', testid: 'sweep-folds' },
    h('thead', null, h('tr', null, th('Fold', true), th('Trial chosen', true), th('Train objective', true), th('Test objective', true), th('Test pnl', true), th('Test trades', true))),
    h(
      'tbody',
      null,
      (res.folds ?? []).map((f) =>
        h('tr', null, td(int(f.fold), true), td(f.trial === null ? 'none (no train objective)' : int(f.trial), true), td(fmt(f.train_objective), true), td(fmt(f.test_objective), true), td(pnl(f.test.total_pnl), true), td(int(f.test.n_trades), true)),
      ),
    ),
  );
  labelCells(table);
  return h(
    'section',
    { 'aria-label': 'Folds' },
    h('h3', null, 'Walk-forward folds'),
    h('p', { class: 'muted' }, 'Each fold chose its best trial on the markets before it and was tested on the next block; the best trial’s test figures above join these blocks. A fold where no trial has a train objective chose none, and its block counts in no figure.'),
    table,
  );
}

const interval = (iv: [number, number] | null, f: (x: number) => string) => (iv ? ` [${f(iv[0])}, ${f(iv[1])}]` : '');

/** One statistic of a summary as the table writes it. */
function statText(s: Summary | null, key: string): string {
  if (!s) return '—';
  switch (key) {
    case 'n_markets':
    case 'n_markets_traded':
    case 'n_trades':
      return int(s[key]);
    case 'total_pnl':
      return pnl(s.total_pnl);
    case 'total_fees':
      return fee(s.total_fees);
    case 'win_rate':
      return s.win_rate === null ? '—' : pct(s.win_rate) + interval(s.win_rate_ci95, (x) => pct(x));
    case 'ev_per_trade':
      return s.ev_per_trade === null ? '—' : pnl(s.ev_per_trade, 3) + interval(s.ev_ci95, (x) => pnl(x, 3));
    case 'pnl_per_market': {
      const d = s.pnl_per_market;
      return d ? `${pnl(d.mean)} (sd ${usd(d.sd)}); ${pnl(d.p5)} / ${pnl(d.p50)} / ${pnl(d.p95)}` : '—';
    }
    case 'psr0':
      return s.psr0 === null ? '—' : num(s.psr0, 3);
    case 'portfolio_max_drawdown':
      return usd(s.portfolio_max_drawdown);
    case 'brier':
      return s.brier_entry === null ? '—' : `${num(s.brier_entry, 4)} / ${num(s.brier_market, 4)}`;
    default:
      return num(s[key as keyof Summary] as number | null, 3);
  }
}

/** The best trial's statistics on train and test, each with a line of plain words. */
function statsSection(train: Summary, test: Summary | null, hasTest: boolean, split: string): HTMLElement {
  const table = h(
    'table',
    { class: 'data cards stats', testid: 'sweep-stats' },
    h('caption', null, 'The best trial’s statistics'),
    h('thead', null, h('tr', null, th('Statistic'), th('Train', true), hasTest ? th(split === 'WALK_FORWARD' ? 'Test (folds joined)' : 'Test', true) : null, th('What it says'))),
    h(
      'tbody',
      null,
      STAT_WORDS.map(([key, label, words]) =>
        h(
          'tr',
          { testid: 'stat-row', 'data-stat': key },
          h('th', { scope: 'row' }, label),
          h('td', { class: 'num', testid: 'stat-train' }, statText(train, key)),
          hasTest ? h('td', { class: 'num', testid: 'stat-test' }, statText(test, key)) : null,
          h('td', { class: 'words wide' }, words),
        ),
      ),
    ),
  );
  labelCells(table);
  const buckets = (train.calibration ?? []).filter((c) => c.entries > 0);
  const calTable = h(
    'table',
    { class: 'data cards' },
    h('thead', null, h('tr', null, th('Entry price'), th('Entries', true), th('Mean price', true), th('Side won', true), th('95% range', true))),
    h(
      'tbody',
      null,
      buckets.map((c) =>
        h(
          'tr',
          null,
          td(`${num(c.from, 1)} to ${num(c.to, 1)}`),
          td(int(c.entries), true),
          td(num(c.mean_price, 3), true),
          td(num(c.side_won, 3), true),
          td(c.side_won_ci95 ? `${num(c.side_won_ci95[0], 3)} to ${num(c.side_won_ci95[1], 3)}` : '—', true),
        ),
      ),
    ),
  );
  labelCells(calTable);
  const calibration = buckets.length
    ? h(
        'details',
        { testid: 'sweep-calibration' },
        h('summary', null, 'Calibration: did entries at a price win that often? (train)'),
        h('p', { class: 'muted' }, 'A side bought at 0.30 should win 30% of the time if the price was fair; winning more often than the price is an edge.'),
        calTable,
      )
    : null;
  return h('section', { 'aria-label': 'Statistics' }, h('h3', null, 'Statistics'), h('div', { class: 'table-box' }, table), calibration);
}

type TrialKey = 'trial' | `p${number}` | 'train_objective' | 'test_objective' | 'train_pnl' | 'test_pnl' | 'trades' | 'win_rate' | 'sharpe';

/** Every trial in a table sorted by any column (the best objective first). */
/** The largest page GET /v1/sweeps/{id}/trials answers. */
const TRIALS_PAGE = 1000;

function trialsSection(id: string, res: Results, fmt: (x: number | null) => string, objName: string, hasTest: boolean): HTMLElement {
  const paths = res.trials[0]?.parameters.map((p) => p.path) ?? [];
  // A trial's test figures under WALK_FORWARD: the last fold's block only.
  const last = walkForward(res) ? ' (last fold)' : '';
  const keyOf = (t: TrialResult, k: TrialKey): number | string | null => {
    if (/^p\d+$/.test(k)) {
      const v = t.parameters[Number(k.slice(1))]?.value;
      return typeof v === 'number' ? v : v === undefined ? null : String(v);
    }
    switch (k) {
      case 'trial':
        return t.trial;
      case 'train_objective':
        return t.train_objective;
      case 'test_objective':
        return t.test_objective;
      case 'train_pnl':
        return t.train.total_pnl;
      case 'test_pnl':
        return t.test?.total_pnl ?? null;
      case 'trades':
        return t.train.n_trades;
      case 'win_rate':
        return t.train.win_rate;
      case 'sharpe':
        return t.train.sharpe_per_market;
    }
    return null;
  };
  let sortKey: TrialKey = 'train_objective';
  let asc = false;
  const tbody = h('tbody');
  const caption = h('caption');
  const cols: [string, TrialKey, boolean][] = [
    ['Trial', 'trial', true],
    ...paths.map((p, i): [string, TrialKey, boolean] => [p, `p${i}`, true]),
    [`Train ${objName}`, 'train_objective', true],
    ...(hasTest ? [[`Test ${objName}${last}`, 'test_objective', true] as [string, TrialKey, boolean]] : []),
    ...(res.objective === 'total_pnl' ? [] : [['Train pnl', 'train_pnl', true] as [string, TrialKey, boolean]]),
    ...(res.objective !== 'total_pnl' && hasTest ? [[`Test pnl${last}`, 'test_pnl', true] as [string, TrialKey, boolean]] : []),
    ['Train trades', 'trades', true],
    ['Train win rate', 'win_rate', true],
    ['Train Sharpe/market', 'sharpe', true],
  ];
  const heads = cols.map(([label, key, numeric]) => {
    const b = h('button', { type: 'button', class: 'sort', 'data-key': key }, label);
    const cell = h('th', { scope: 'col', class: numeric ? 'num' : null, 'aria-sort': key === sortKey ? 'descending' : 'none' }, b);
    b.addEventListener('click', () => {
      asc = sortKey === key ? !asc : key === 'trial' || key.startsWith('p');
      sortKey = key;
      heads.forEach((x) => x.setAttribute('aria-sort', 'none'));
      cell.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      render();
    });
    return cell;
  });
  const table = h('table', { class: 'data cards trials', testid: 'sweep-trials' }, caption, h('thead', null, h('tr', null, heads)), tbody);
  const render = () => {
    // Undefined values (null) sort last either way.
    const sorted = [...res.trials].sort((x, y) => {
      const a = keyOf(x, sortKey);
      const b = keyOf(y, sortKey);
      if (a === null || b === null) return a === b ? x.trial - y.trial : a === null ? 1 : -1;
      const c = typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));
      return (asc ? c : -c) || x.trial - y.trial;
    });
    const shown = sorted.slice(0, TRIAL_ROWS);
    caption.textContent =
      sorted.length > shown.length ? `The first ${int(shown.length)} of ${int(sorted.length)} trials by the sorted column (click a heading to sort)` : `${plural(sorted.length, 'trial')} (click a heading to sort)`;
    clear(
      tbody,
      shown.map((t) =>
        h(
          'tr',
          { testid: 'trial-row', 'data-trial': t.trial, class: t.trial === res.best?.trial ? 'current' : null },
          td(int(t.trial), true),
          t.parameters.map((p) => td(valueText(p.value), true)),
          td(fmt(t.train_objective), true),
          hasTest ? td(fmt(t.test_objective), true) : null,
          res.objective === 'total_pnl' ? null : td(pnl(t.train.total_pnl), true),
          res.objective !== 'total_pnl' && hasTest ? td(pnl(t.test?.total_pnl), true) : null,
          td(int(t.train.n_trades), true),
          td(t.train.win_rate === null ? '—' : pct(t.train.win_rate), true),
          td(num(t.train.sharpe_per_market, 3), true),
        ),
      ),
    );
    labelCells(table);
  };
  render();
  // Every trial, one a row, as GET /v1/sweeps/{id}/trials answers CSV
  // (a link cannot send the Accept header that asks for it).
  const csv = h('button', { type: 'button', testid: 'sweep-trials-csv' }, 'Download every trial (CSV)');
  const problem = h('span', { class: 'warning', role: 'alert', hidden: true });
  csv.addEventListener('click', async () => {
    const back = holdFocus(csv);
    csv.disabled = true;
    problem.hidden = true;
    try {
      // Pages of at most 1,000 trials, each with the header: the first's kept.
      const parts: string[] = [];
      for (let offset = 0; offset === 0 || offset < res.trials.length; offset += TRIALS_PAGE) {
        const page = await call<string>('GET', `/v1/sweeps/${encodeURIComponent(id)}/trials?limit=${TRIALS_PAGE}&offset=${offset}`, undefined, {
          headers: { Accept: 'text/csv' },
          raw: true,
        });
        parts.push(offset === 0 ? page : page.slice(page.indexOf('\n') + 1));
      }
      const a = h('a', { href: URL.createObjectURL(new Blob(parts, { type: 'text/csv' })), download: `${id}-trials.csv` });
      document.body.append(a);
      a.click();
      a.remove();
    } catch (e) {
      problem.textContent = `The download failed: ${e instanceof ApiError ? e.message : String(e)}`;
      problem.hidden = false;
    } finally {
      csv.disabled = false;
      back();
    }
  });
  return h('section', { 'aria-label': 'Trials' }, h('h3', null, 'Trials'), h('p', null, csv, ' ', problem), h('div', { class: 'table-box wide' }, table));
}
