// The strategy builder shared by the replay page (and the agent's
// settings): conditions with every field and operator, size, max loss,
// order type (with the resting GTC order's options), re-entry control,
// fees and latency.
import { ApiError } from './api';
import { type Condition, formatCode, OPERATORS, parseCode, type Rules } from './strategy';
import { field, h, select } from './dom';

/** The condition fields in groups, each with what it is (DESIGN 6). */
export const FIELD_GROUPS: [string, [string, string][]][] = [
  [
    'Prices',
    [
      ['price_up', 'the recorded price of UP (its best ask)'],
      ['price_down', 'the recorded price of DOWN (its best ask)'],
    ],
  ],
  [
    'Book',
    [
      ['bid_up', "UP's best bid (what a sell gets now); its price without a book"],
      ['bid_down', "DOWN's best bid (what a sell gets now); its price without a book"],
      ['mid_up', "UP's (best bid + best ask) / 2, else its price"],
      ['mid_down', "DOWN's (best bid + best ask) / 2, else its price"],
      ['display_up', 'the price Polymarket shows for UP: the mid when the spread is at most 0.10, else the last trade'],
      ['display_down', 'the price Polymarket shows for DOWN: the mid when the spread is at most 0.10, else the last trade'],
      ['imbalance_up', "UP's book imbalance, −1 to 1: (bid size − ask size) / (bid size + ask size)"],
      ['imbalance_down', "DOWN's book imbalance, −1 to 1: (bid size − ask size) / (bid size + ask size)"],
    ],
  ],
  [
    'Coin',
    [
      ['coin_price', "the coin's price in dollars"],
      ['coin_move_pct', 'the coin’s move in % from the price to beat; ≥ 0 exactly while UP is winning'],
      ['coin_return_60s', 'the coin’s return in % over the last 60 s (no value in the first minute)'],
    ],
  ],
  [
    'Time',
    [
      ['time_remaining_pct', 'the % of the market’s time still to run, 100 to 0'],
      ['time_remaining_s', 'the seconds until the market ends'],
    ],
  ],
  ['Spread', [['spread', '|price_up − price_down|']]],
];
const FIELD_HELP = new Map(FIELD_GROUPS.flatMap(([, fs]) => fs));

export function conditionRow(testid: string, c: Condition, onChange: () => void, onRemove: () => void): HTMLElement {
  const f = h(
    'select',
    { name: 'field', 'aria-label': 'Field' },
    FIELD_GROUPS.map(([label, fs]) => h('optgroup', { label }, fs.map(([v, help]) => h('option', { value: v, title: help }, v)))),
  );
  f.value = c.field;
  const op = select('', OPERATORS.map((x): [string, string] => [x, x]), c.operator, { name: 'operator', 'aria-label': 'Operator' });
  const v = h('input', { type: 'number', step: 'any', name: 'value', value: String(c.value), 'aria-label': 'Value', required: true });
  const rm = h('button', { type: 'button', class: 'link', 'aria-label': 'Remove this condition' }, 'Remove');
  const help = h('small', { class: 'muted cond-help' });
  const showHelp = () => (help.textContent = FIELD_HELP.get(f.value) ?? '');
  showHelp();
  f.setAttribute('aria-describedby', (help.id = `h${Math.random().toString(36).slice(2)}`));
  const row = h('div', { class: 'cond', testid }, f, op, v, rm, help);
  for (const x of [f, op, v]) x.addEventListener('input', onChange);
  f.addEventListener('input', showHelp);
  rm.addEventListener('click', onRemove);
  return row;
}

/**
 * A number box's value; an empty box is NaN (null in the body), never 0, so
 * that the API names the value as missing instead of running with 0.
 */
export const numberIn = (x: HTMLInputElement): number => (x.value.trim() === '' ? NaN : Number(x.value));

export function readRow(row: Element): Condition {
  const q = (n: string) => row.querySelector(`[name=${n}]`) as HTMLInputElement;
  return { field: q('field').value, operator: q('operator').value, value: numberIn(q('value')) };
}

/** The rules' fields beyond the side, conditions, size and max loss. */
export type OrderRules = Omit<Rules, 'side' | 'entryConditions' | 'exitConditions' | 'positionSize' | 'maxLossPercent' | 'coin' | 'marketType'>;

export interface ExecutionControls {
  el: HTMLElement;
  /** The order type, the GTC options, re-entry control, fees and latency: only what differs from the defaults. */
  read(): OrderRules;
  /** Shows r's values (a pasted strategy_code). */
  write(r: OrderRules): void;
  /** The control of a request field (its JSON name), for marking the one the API refused. */
  controls: Record<string, HTMLElement>;
}

// A number box's value, or undefined when empty; NaN stays NaN so that the API names it.
const val = (x: HTMLInputElement): number | undefined => (x.value.trim() === '' ? undefined : Number(x.value));
// Seconds to whole milliseconds where they are whole (1.1 s is 1100 ms, not 1100.0000000000002).
const ms = (s: number | undefined) => (s === undefined ? undefined : Number((s * 1000).toFixed(3)));
const secs = (m: number | undefined) => (m ? String(m / 1000) : '');

/**
 * Order type (MARKET, LIMIT, GTC with its options shown only for GTC),
 * re-entry control, fees (feeModel NONE | MARKET | CUSTOM with feeRate and
 * feeExponent) and latency.
 *
 * inherit (the agent's settings): each starts as "from the prompt or
 * code" and is sent only when set, to win over them; the order type's box
 * is then `${prefix}-order-type`, and a GTC chosen there sends each of its
 * options as shown, so that the code's own cannot hide behind them.
 */
export function executionControls(prefix: string, onChange: () => void = () => {}, withOrders = true, inherit = false): ExecutionControls {
  const FROM = 'from the prompt or code';
  const order = select(
    inherit ? `${prefix}-order-type` : 'order-type',
    [
      ...(inherit ? [['', FROM] as [string, string]] : []),
      ['MARKET', 'MARKET: take the book at once'],
      ['LIMIT', 'LIMIT: take the book at the best price only'],
      ['GTC', 'GTC: rest on the book as a maker'],
    ],
    inherit ? '' : 'MARKET',
  );
  const postOnly = h('input', { type: 'checkbox', testid: 'gtc-post-only' });
  const offset = h('input', { type: 'number', min: '0', max: '50', step: '1', value: '0', placeholder: inherit ? 'from the code' : '0', testid: 'gtc-offset', inputmode: 'numeric' });
  const cancel = h('input', { type: 'number', min: '0.001', step: 'any', value: '', placeholder: inherit ? 'from the code, else never' : 'never', testid: 'gtc-cancel-after' });
  const queue = select(
    'gtc-queue',
    [
      ['RISK_AVERSE', 'RISK_AVERSE: behind the size shown at its price'],
      ['FRONT', 'FRONT: at the front of the queue (optimistic)'],
    ],
    'RISK_AVERSE',
  );
  const rebates = h('input', { type: 'checkbox', testid: 'gtc-rebates' });
  const cooldown = h('input', { type: 'number', min: '0', max: '86400', step: 'any', value: '', placeholder: inherit ? FROM : '0', testid: 'reentry-cooldown' });
  const maxEntries = h('input', { type: 'number', min: '1', max: '10000', step: '1', value: '', placeholder: inherit ? FROM : 'no limit', testid: 'max-entries', inputmode: 'numeric' });
  // inherit (the agent's settings): fees and latency default to the
  // prompt's or the code's (nothing sent); an explicit "none" or 0 is sent,
  // and wins over them.
  const model = select(
    `${prefix}-fee-model`,
    [...(inherit ? [['', FROM] as [string, string]] : []), ['NONE', 'none'], ['MARKET', "the market's fee schedule"], ['CUSTOM', 'custom']],
    inherit ? '' : 'NONE',
  );
  const rate = h('input', { type: 'number', min: '0', max: '1', step: 'any', value: '0.07', testid: `${prefix}-fee-rate` });
  const exp = h('input', { type: 'number', min: '1', max: '4', step: '1', value: '1', placeholder: '1', testid: `${prefix}-fee-exponent` });
  const latency = h('input', { type: 'number', min: '0', max: '60000', step: '1', value: inherit ? '' : '0', placeholder: inherit ? FROM : '0', testid: `${prefix}-latency` });

  const check = (label: string, box: HTMLInputElement, hint: string) => {
    box.id ||= `c${Math.random().toString(36).slice(2)}`;
    return h('div', { class: 'field check' }, h('label', { for: box.id }, box, ` ${label}`), h('small', null, hint));
  };
  const gtc = h(
    'fieldset',
    { testid: 'gtc-options', hidden: true },
    h('legend', null, 'Resting order (GTC)'),
    h(
      'div',
      { class: 'row' },
      check('Post only', postOnly, 'Never take the book: an order that would cross it at once is rejected (REJECTED, POST_ONLY).'),
      field(
        'Offset (ticks)',
        offset,
        `Ticks better than the best bid for a buy (the best ask for a sell), 0 to 50: more aggressive, filled sooner${inherit ? "; empty: as the code says, else 0" : ''}.`,
      ),
      field(
        'Cancel after (seconds)',
        cancel,
        inherit
          ? 'Cancel an unfilled order this long after it was placed; empty: as the code says, else it rests until filled or the market ends.'
          : 'Cancel an unfilled order this long after it was placed; empty rests until filled or the market ends.',
      ),
    ),
    h(
      'div',
      { class: 'row' },
      field(
        'Queue model',
        queue,
        'RISK_AVERSE puts the order behind everything shown at its price when it lands; FRONT puts it first in line, the optimistic bound.',
      ),
      check('Include rebates in pnl', rebates, 'Maker rebates are paid daily from a pool, so they are an estimate; without this they are shown but not counted.'),
    ),
  );
  // What fees are, said only where a fee model applies: under none there
  // are none (and "from the prompt or code" may name none).
  const fees = field('Fees', model, 'Taker fees; makers pay none.');
  const feeHint = fees.querySelector('small')!;
  feeHint.hidden = true;
  const custom = h('div', { class: 'row', hidden: true }, field('Fee rate (0 to 1)', rate), field('Fee exponent (1 to 4)', exp, 'Empty: 1.'));
  const show = () => {
    gtc.hidden = order.value !== 'GTC';
    custom.hidden = model.value !== 'CUSTOM';
    feeHint.hidden = model.value !== 'MARKET' && model.value !== 'CUSTOM';
  };
  for (const x of [order, postOnly, offset, cancel, queue, rebates, cooldown, maxEntries, model, rate, exp, latency]) {
    x.addEventListener('input', () => {
      show();
      onChange();
    });
  }
  const el = h(
    'div',
    null,
    withOrders &&
      h(
        'div',
        { class: 'row' },
        field(
          'Order type',
          order,
          `${inherit ? 'Wins over the prompt and the code. ' : ''}MARKET and LIMIT take liquidity (taker fees); GTC rests on the book and fills as a maker (no fee, a rebate).`,
        ),
      ),
    withOrders && gtc,
    withOrders &&
    h(
      'fieldset',
      null,
      h('legend', null, 'Re-entry'),
      h(
        'div',
        { class: 'row' },
        field(
          'Cooldown after an exit (seconds)',
          cooldown,
          inherit ? 'No new entry until this long after the last exit; 0 for none (a generated strategy waits 30 s unless told); empty: as the prompt or code says.' : 'No new entry until this long after the last exit; empty or 0 for none.',
        ),
        field(
          'Max entries per market',
          maxEntries,
          inherit
            ? 'At most this many entries in one market, 1 to 10,000; empty: as the prompt or code says, else no limit.'
            : 'At most this many entries in one market, 1 to 10,000; empty for no limit.',
        ),
      ),
    ),
    h(
      'fieldset',
      null,
      h('legend', null, 'Execution'),
      h(
        'div',
        { class: 'row' },
        fees,
        field('Latency (ms)', latency, `Orders fill on the first snapshot at least this late${inherit ? '; empty: as the prompt or code says, else 0' : ''}.`),
      ),
      custom,
    ),
  );
  const controls: Record<string, HTMLElement> = {
    feeModel: model,
    feeRate: rate,
    feeExponent: exp,
    latencyMs: latency,
    ...(withOrders
      ? {
          orderType: order,
          postOnly,
          limitOffsetTicks: offset,
          cancelAfterMs: cancel,
          queueModel: queue,
          includeRebates: rebates,
          reentryCooldownMs: cooldown,
          maxEntriesPerMarket: maxEntries,
        }
      : {}),
  };
  return {
    el,
    controls,
    read() {
      const out: OrderRules = withOrders && order.value !== '' ? { orderType: order.value } : {};
      if (withOrders && order.value === 'GTC') {
        // The agent's GTC (inherit) states every option it shows: an
        // unticked box or an offset of 0 wins over a code's own.
        if (postOnly.checked || inherit) out.postOnly = postOnly.checked;
        const o = val(offset);
        if (o !== undefined && (o !== 0 || inherit)) out.limitOffsetTicks = o;
        const c = ms(val(cancel));
        if (c !== undefined) out.cancelAfterMs = c;
        out.queueModel = queue.value;
        // Only a resting order's maker fills earn rebates: the box,
        // shown with GTC only, is sent with GTC only.
        if (inherit || rebates.checked) out.includeRebates = rebates.checked;
      }
      if (inherit ? model.value !== '' : model.value !== 'NONE') out.feeModel = model.value;
      if (model.value === 'CUSTOM') {
        out.feeRate = val(rate);
        out.feeExponent = val(exp);
      }
      const l = val(latency);
      if (l !== undefined && (inherit || l !== 0)) out.latencyMs = l;
      if (!withOrders) return out;
      const cd = ms(val(cooldown));
      if (cd !== undefined && (cd !== 0 || inherit)) out.reentryCooldownMs = cd;
      const me = val(maxEntries);
      if (me !== undefined) out.maxEntriesPerMarket = me;
      return out;
    },
    write(r) {
      order.value = r.orderType ?? (inherit ? '' : 'MARKET');
      postOnly.checked = Boolean(r.postOnly);
      offset.value = String(r.limitOffsetTicks ?? 0);
      cancel.value = secs(r.cancelAfterMs);
      queue.value = r.queueModel ?? 'RISK_AVERSE';
      rebates.checked = Boolean(r.includeRebates);
      // The agent's (inherit) boxes keep "from the prompt or code" for what r leaves out.
      model.value = r.feeModel || (inherit ? '' : 'NONE');
      if (r.feeRate !== undefined) rate.value = String(r.feeRate);
      if (r.feeExponent !== undefined) exp.value = String(r.feeExponent);
      latency.value = r.latencyMs === undefined || r.latencyMs === null ? (inherit ? '' : '0') : String(r.latencyMs);
      // The agent's explicit 0 (no cooldown, over a generated 30 s) stays 0.
      cooldown.value = inherit && r.reentryCooldownMs === 0 ? '0' : secs(r.reentryCooldownMs);
      maxEntries.value = r.maxEntriesPerMarket ? String(r.maxEntriesPerMarket) : '';
      show();
    },
  };
}

/** The replay page's default strategy, where a builder starts. */
export const DEFAULT_RULES: Rules = {
  side: 'UP',
  entryConditions: [{ field: 'price_up', operator: '<', value: 0.45 }],
  exitConditions: [{ field: 'price_up', operator: '>=', value: 0.6 }, { field: 'time_remaining_pct', operator: '<=', value: 5 }],
  positionSize: 100,
  maxLossPercent: 50,
  orderType: 'MARKET',
};

/** The first number the builder's rules lack (a box left empty), in the code's words, or ''. */
function missingNumber(r: Rules): string {
  for (const [word, cs] of [
    ['entry', r.entryConditions],
    ['exit', r.exitConditions],
  ] as const) {
    const i = cs.findIndex((c) => Number.isNaN(c.value));
    if (i >= 0) return `${word} condition ${i + 1} (${cs[i].field} ${cs[i].operator}) has no value: give the number the field is compared with`;
  }
  if (Number.isNaN(r.positionSize)) return 'size is missing: it must be between 1 and 10000 shares';
  return '';
}

/** A problem in the words the API would use ("strategy_code: size …" reads as "size …"). */
export function codeProblem(e: unknown): string {
  return (e as Error).message.replace(/^strategy_code ?: /, '');
}

/** The boxes in seconds whose request fields are in milliseconds, by field. */
const SECONDS_BOXES: Record<string, string> = { reentryCooldownMs: 'Cooldown after an exit', cancelAfterMs: 'Cancel after' };

/**
 * The API's refusal of a cooldown or cancel-after, said in the seconds of
 * the box it came from: "Cooldown after an exit: -1 s is not allowed: it
 * must be from 0 to 86400 seconds (a day), in whole milliseconds
 * (reentryCooldownMs -1000)", where it named milliseconds the user never
 * typed (-1000 for the -1 in the box). Any other error is answered as it is.
 */
export function inSeconds(e: unknown): unknown {
  if (!(e instanceof ApiError) || e.code !== 'VALIDATION_ERROR') return e;
  const m = /^((?:strategy: )?)(reentryCooldownMs|cancelAfterMs) (\S+) is not allowed: it must be a whole number of milliseconds from (\d+) to (\d+)(.*)$/.exec(e.message);
  if (!m) return e;
  const [, prefix, name, v, lo, hi, tail] = m;
  const s = (ms: string) => String(Number((Number(ms) / 1000).toPrecision(12)));
  const message = `${prefix}${SECONDS_BOXES[name]}: ${s(v)} s is not allowed: it must be from ${s(lo)} to ${s(hi)} seconds${tail.replace('left out', 'left empty')}, in whole milliseconds (${name} ${v})`;
  return new ApiError(e.status, e.code, message, e.details, e.requestId, e.retryAfterMs);
}

/** The refusal of a run while the code box holds a code the builder could not take (unloadedCode). */
export function unloadedCodeError(problem: string): Error {
  return new Error(`Nothing ran: the strategy_code box holds a code the builder could not take, so the builder still shows the strategy before it. Correct the code (${problem}), or change the builder, which writes its own.`);
}

export interface StrategyBuilder {
  side: HTMLSelectElement;
  /** The entry conditions' fieldset ("Enter when all of these hold"). */
  entries: HTMLElement;
  /** The exit conditions' fieldset ("Exit when any of these holds"). */
  exits: HTMLElement;
  /** Shares per trade and max loss, in a row. */
  sizes: HTMLElement;
  /** Order type, resting-order options, re-entry, fees and latency. */
  exec: HTMLElement;
  /** The strategy_code box (labelled) and the line under it. */
  code: HTMLElement;
  codeStatus: HTMLElement;
  /** The rules as the builder shows them. */
  rules(): Rules;
  /** Shows r in the builder and its code box. */
  load(r: Rules): void;
  /** The control of a field the API names ("positionSize", "entryConditions[0].value"), or null. */
  controlOf(field: string): HTMLElement | null;
  /**
   * What is wrong with a code typed or pasted into the box that the
   * builder could not take (it still shows the strategy before it), or ''
   * when the box holds the builder's strategy: a run must not go on with
   * the builder's strategy under a code that says another.
   */
  unloadedCode(): string;
}

/**
 * The strategy builder of the replay page, for any page that takes a
 * strategy: side, conditions, size, max loss, the execution controls, and
 * a strategy_code box that follows the builder and fills it when edited.
 * Its controls' data-testids start with prefix (replay-side, replay-entry,
 * replay-code, …); onChange runs after every change.
 */
export function strategyBuilder(prefix: string, onChange: () => void = () => {}, codeLabel = 'strategy_code (edit it, or paste one from the agent, to fill the builder)'): StrategyBuilder {
  const side = select(`${prefix}-side`, [['UP', 'UP'], ['DOWN', 'DOWN']], 'UP');
  const size = h('input', { type: 'number', min: '1', max: '10000', step: 'any', value: '100', testid: `${prefix}-size` });
  const maxloss = h('input', { type: 'number', min: '1', max: '100', step: 'any', value: '50', placeholder: '50 (the default)', testid: `${prefix}-maxloss` });
  const exec = executionControls(prefix, () => sync());
  const entries = h('div', { class: 'conds' });
  const exits = h('div', { class: 'conds' });
  const code = h('textarea', { testid: `${prefix}-code`, rows: '3', spellcheck: 'false', class: 'code' });
  // Its line is always there (a line high even when empty, a warning no
  // taller than a note), so a message appearing as the box loses focus does
  // not move what is below it: a click on Run right after a paste lands.
  const codeMsg = h('p', { class: 'code-status muted', role: 'status', testid: `${prefix}-code-status` });

  const addRow = (box: HTMLElement, testid: string, c: Condition) => {
    const row = conditionRow(testid, c, sync, () => {
      // The keyboard stays in the list: on the Remove of the condition now
      // in this one's place, else of the one before, else on the list's add
      // button (where it fell to the page's top).
      const had = row.contains(document.activeElement);
      const near = (row.nextElementSibling ?? row.previousElementSibling)?.querySelector<HTMLElement>('button');
      row.remove();
      sync();
      if (had) (near ?? (box === entries ? addEntry : addExit)).focus();
    });
    box.append(row);
  };
  const rules = (): Rules => ({
    side: side.value,
    entryConditions: [...entries.children].map(readRow),
    exitConditions: [...exits.children].map(readRow),
    positionSize: numberIn(size),
    // Empty is the API's default (50), as the box's placeholder says.
    maxLossPercent: val(maxloss),
    ...exec.read(),
  });
  // The code box follows the builder; a value the API would refuse is
  // explained under it in the API's own words (strategy.ts is the server's
  // parser, message for message).
  function sync(): void {
    const r = rules();
    code.value = formatCode(r);
    try {
      // An empty box is named as such (the code has a gap there), not as
      // a code the parser cannot read.
      const gap = missingNumber(r);
      if (gap) throw new Error(gap);
      parseCode(code.value);
      codeMsg.textContent = '';
      codeMsg.className = 'code-status muted';
    } catch (e) {
      codeMsg.textContent = codeProblem(e);
      codeMsg.className = 'code-status warning';
    }
    onChange();
  }
  // load sets the builder from r; keepText leaves the code box as typed
  // (while it is being typed or pasted into) instead of writing r's code.
  const load = (r: Rules, keepText = false) => {
    side.value = r.side;
    entries.replaceChildren();
    exits.replaceChildren();
    r.entryConditions.forEach((c) => addRow(entries, `${prefix}-entry`, c));
    r.exitConditions.forEach((c) => addRow(exits, `${prefix}-exit`, c));
    size.value = String(r.positionSize);
    maxloss.value = r.maxLossPercent === undefined || r.maxLossPercent === null ? '' : String(r.maxLossPercent);
    exec.write(r);
    if (keepText) {
      onChange();
      return;
    }
    sync();
  };
  // A code that parses loads as it is typed or pasted: the builder (a GTC
  // code shows the resting-order fields) is in place before the box loses
  // focus, so a click on Run right after a paste is not lost to the page
  // moving under it. An incomplete code waits for the change event, which
  // says what is wrong.
  code.addEventListener('input', () => {
    let r: Rules;
    try {
      r = parseCode(code.value);
    } catch {
      return;
    }
    load(r, true);
  });
  code.addEventListener('change', () => {
    try {
      load(parseCode(code.value));
      codeMsg.textContent = 'The builder now shows this code.';
      codeMsg.className = 'code-status muted';
    } catch (e) {
      codeMsg.textContent = `Not a strategy code: ${codeProblem(e)}`;
      codeMsg.className = 'code-status warning';
    }
  });
  const addEntry = h('button', { type: 'button', testid: `${prefix}-add-entry` }, '+ Entry condition');
  const addExit = h('button', { type: 'button', testid: `${prefix}-add-exit` }, '+ Exit condition');
  addEntry.addEventListener('click', () => {
    addRow(entries, `${prefix}-entry`, { field: 'price_up', operator: '<', value: 0.5 });
    sync();
  });
  addExit.addEventListener('click', () => {
    addRow(exits, `${prefix}-exit`, { field: 'price_up', operator: '>=', value: 0.6 });
    sync();
  });
  for (const x of [side, size, maxloss]) x.addEventListener('input', sync);
  return {
    side,
    entries: h('fieldset', null, h('legend', null, 'Enter when all of these hold'), entries, addEntry),
    exits: h('fieldset', null, h('legend', null, 'Exit when any of these holds'), exits, addExit),
    sizes: h(
      'div',
      { class: 'row' },
      field('Shares per trade', size, '1 to 10,000 shares of the side.'),
      field('Max loss %', maxloss, 'Exit at once (MARKET) when the position has lost this % of its cost, 1 to 100.'),
    ),
    exec: exec.el,
    code: field(codeLabel, code),
    codeStatus: codeMsg,
    rules,
    load,
    controlOf(f) {
      const m = /^(entryConditions|exitConditions)(?:\[(\d+)\](?:\.(field|operator|value))?)?$/.exec(f);
      if (m) {
        const box = m[1] === 'entryConditions' ? entries : exits;
        const row = m[2] === undefined ? undefined : box.children[Number(m[2])];
        if (!row) return (box.querySelector('[name=field]') as HTMLElement | null) ?? (box.parentElement?.querySelector('button') as HTMLElement | null);
        return row.querySelector(`[name=${m[3] ?? 'field'}]`) as HTMLElement | null;
      }
      const own: Record<string, HTMLElement> = { side, positionSize: size, maxLossPercent: maxloss };
      return own[f] ?? exec.controls[f] ?? null;
    },
    unloadedCode() {
      // The builder's own code (which the API may still refuse: size=0) is
      // its strategy; a code that parses was loaded as it was typed. An
      // empty box is no code: the box is an optional way in, and the run
      // goes on with the strategy the builder shows.
      if (!code.value.trim() || code.value === formatCode(rules())) return '';
      try {
        parseCode(code.value);
        return '';
      } catch (e) {
        return codeProblem(e);
      }
    },
  };
}
