// strategy_code, the one-line text form of a strategy. This is a copy of
// jobs/strategy/code.go (ParseCode, FormatCode) that must agree with it
// word for word: the same grammar, the same canonical form, the same error
// messages (cmd/updown/strategy_code_test.go runs both on the same codes).
//
//   [coin=C] [type=T] side=S entry: COND {and COND} exit: COND {or COND} size=N [maxloss=N] [order=MARKET|LIMIT|GTC]
//       [postonly=true|false] [offset=TICKS] [cancel=MS] [queue=risk_averse|front] [rebates=true|false]
//       [fees=none|market|custom [feerate=N] [feeexp=N]] [latency=MS] [cooldown=MS] [maxentries=N]
//   COND = FIELD OPERATOR NUMBER
//
// The optional words come in this order, each at most once; a word at its
// default (0, false, no limit, RISK_AVERSE) is not written.

/** Every condition field (DESIGN 6), in the API's order. */
export const FIELDS = [
  'price_up',
  'price_down',
  'coin_price',
  'spread',
  'time_remaining_pct',
  'bid_up',
  'bid_down',
  'mid_up',
  'mid_down',
  'display_up',
  'display_down',
  'coin_move_pct',
  'time_remaining_s',
  'coin_return_60s',
  'imbalance_up',
  'imbalance_down',
] as const;
export const OPERATORS = ['<', '>', '<=', '>=', '==', 'crosses_above', 'crosses_below'] as const;
export const ORDER_TYPES = ['MARKET', 'LIMIT', 'GTC'] as const;
export const QUEUE_MODELS = ['RISK_AVERSE', 'FRONT'] as const;
export const FEE_MODELS = ['NONE', 'MARKET', 'CUSTOM'] as const;
const COINS = ['BTC', 'ETH', 'SOL'];
export const MAX_CODE_LENGTH = 4096;
const MAX_CONDITIONS = 20;

export interface Condition {
  field: string;
  operator: string;
  value: number;
}

/** The replay request's strategy fields (their JSON names), plus the agent's coin and marketType. */
export interface Rules {
  coin?: string;
  marketType?: string;
  side: string;
  entryConditions: Condition[];
  exitConditions: Condition[];
  positionSize: number;
  maxLossPercent?: number;
  orderType?: string;
  feeModel?: string;
  feeRate?: number;
  feeExponent?: number;
  latencyMs?: number;
  reentryCooldownMs?: number;
  maxEntriesPerMarket?: number;
  postOnly?: boolean;
  limitOffsetTicks?: number;
  cancelAfterMs?: number;
  queueModel?: string;
  includeRebates?: boolean;
}

/** A code the parser refuses: code is the API's error code, message the API's words. */
export class CodeError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** x as encoding/json writes it: the shortest decimal, an exponent (two digits at least) only below 1e-6 or from 1e21.
 * NaN, a builder's empty box, is written as nothing ("size="), the gap the box has. */
export function formatNumber(x: number): string {
  if (Number.isNaN(x)) return '';
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-6 || a >= 1e21)) {
    return x.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  }
  return plain(x);
}

/** x in plain decimal, never an exponent (Go's FormatFloat(x, 'f', -1)). */
function plain(x: number): string {
  const s = String(x);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const digits = m[2] + (m[3] ?? '');
  const exp = Number(m[4]);
  if (exp >= 0) return m[1] + (digits.length <= exp + 1 ? digits.padEnd(exp + 1, '0') : `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`);
  return `${m[1]}0.${'0'.repeat(-exp - 1)}${digits}`;
}

const int = (x: number | undefined) => String(x ?? 0);

export function formatCode(r: Rules): string {
  let b = '';
  if (r.coin) b += `coin=${r.coin} `;
  if (r.marketType) b += `type=${r.marketType} `;
  const conds = (cs: Condition[], joiner: string) => cs.map((c) => `${c.field} ${c.operator} ${formatNumber(c.value)}`).join(joiner);
  b += `side=${r.side} entry: ${conds(r.entryConditions, ' and ')} exit: ${conds(r.exitConditions, ' or ')}`;
  b += ` size=${formatNumber(r.positionSize)}`;
  if (r.maxLossPercent) b += ` maxloss=${formatNumber(r.maxLossPercent)}`;
  if (r.orderType) b += ` order=${r.orderType}`;
  if (r.postOnly) b += ' postonly=true';
  if (r.limitOffsetTicks) b += ` offset=${int(r.limitOffsetTicks)}`;
  if (r.cancelAfterMs) b += ` cancel=${int(r.cancelAfterMs)}`;
  if (r.queueModel && r.queueModel !== 'RISK_AVERSE') b += ` queue=${r.queueModel.toLowerCase()}`;
  if (r.includeRebates) b += ' rebates=true';
  if (r.feeModel) b += ` fees=${r.feeModel.toLowerCase()}`;
  if (r.feeRate !== undefined && r.feeRate !== null) b += ` feerate=${formatNumber(r.feeRate)}`;
  if (r.feeExponent) b += ` feeexp=${int(r.feeExponent)}`;
  if (r.latencyMs) b += ` latency=${int(r.latencyMs)}`;
  if (r.reentryCooldownMs) b += ` cooldown=${int(r.reentryCooldownMs)}`;
  if (r.maxEntriesPerMarket) b += ` maxentries=${int(r.maxEntriesPerMarket)}`;
  return b;
}

const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const EXAMPLE = 'side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET';
const VALIDATION = 'VALIDATION_ERROR';

// Go's %q for the words a code holds (printable text).
const q = (s: string) => JSON.stringify(s);
const oneOf = (s: string, allowed: readonly string[]) => allowed.includes(s);
function caseHint(v: string, allowed: readonly string[]): string {
  const a = allowed.find((x) => x.toLowerCase() === v.toLowerCase());
  return a === undefined ? '' : ` (values are case-sensitive: use ${q(a)})`;
}

// The replay validator's JSON names in the code's words (code.go's codeWords).
const CODE_WORDS: [string, string][] = [
  ['positionSize', 'size'],
  ['maxLossPercent', 'maxloss'],
  ['entryConditions', 'entry'],
  ['exitConditions', 'exit'],
  ['marketType', 'type'],
  ['feeModel', 'fees'],
  ['feeRate', 'feerate'],
  ['feeExponent', 'feeexp'],
  ['latencyMs', 'latency'],
  ['reentryCooldownMs', 'cooldown'],
  ['maxEntriesPerMarket', 'maxentries'],
  ['postOnly', 'postonly'],
  ['limitOffsetTicks', 'offset'],
  ['cancelAfterMs', 'cancel'],
  ['queueModel', 'queue'],
  ['includeRebates', 'rebates'],
  ['orderType', 'order'],
];
function codeWords(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; ) {
    const hit = CODE_WORDS.find(([k]) => s.startsWith(k, i));
    if (hit) {
      out += hit[1];
      i += hit[0].length;
    } else out += s[i++];
  }
  return out;
}

const codeError = (code: string, msg: string) => new CodeError(code, `strategy_code${msg}`);

function parseMarketType(s: string): string | undefined {
  return ({ '5m': '5m', '15m': '15m', '1h': '1hr', '1hr': '1hr', '4h': '4hr', '4hr': '4hr', '24h': '24hr', '24hr': '24hr' } as Record<string, string>)[s.toLowerCase()];
}

/**
 * parseCode reads a strategy code and returns its rules normalized as the
 * server does (maxloss 50 and order MARKET when absent, queue RISK_AVERSE for
 * GTC, feeexp 1 for custom fees), or throws a CodeError with the server's message.
 */
export function parseCode(code: string): Rules {
  if (new TextEncoder().encode(code).length > MAX_CODE_LENGTH) {
    throw codeError(VALIDATION, ` is ${new TextEncoder().encode(code).length} bytes long: at most ${MAX_CODE_LENGTH} are allowed`);
  }
  const w = code.split(/\s+/).filter(Boolean);
  if (w.length === 0) throw codeError(VALIDATION, ` is empty: it reads like ${q(EXAMPLE)}`);
  let pos = 0;
  const failAt = (i: number, c: string, msg: string) => codeError(c, ` ${i < w.length ? `at word ${i + 1} (${q(w[i])})` : 'at the end'}: ${msg}`);
  const fail = (c: string, msg: string) => failAt(pos, c, msg);
  const failPrev = (c: string, msg: string) => failAt(pos - 1, c, msg);
  const peek = () => (pos < w.length ? w[pos] : '');
  const optional = (key: string): string | undefined => (peek().startsWith(key) ? w[pos++].slice(key.length) : undefined);
  const required = (key: string, c: string, what: string): string => {
    const v = optional(key);
    if (v === undefined) throw fail(c, `expected ${key} followed by ${what}`);
    if (v === '') throw failPrev(c, `${key} needs ${what}`);
    return v;
  };
  const number = (v: string, after: string): number => {
    const f = after.endsWith('=') ? failPrev : fail;
    if (!DECIMAL.test(v)) throw f(VALIDATION, `expected a number after ${after}, such as 0.35`);
    const x = Number(v);
    if (!Number.isFinite(x)) throw f(VALIDATION, `the number after ${after} is out of range`);
    return x;
  };
  const optionalNumber = (key: string): number | undefined => {
    const v = optional(key);
    return v === undefined ? undefined : number(v, key);
  };
  const boolean = (v: string, key: string): boolean => {
    const l = v.toLowerCase();
    if (l === 'true' || l === 'false') return l === 'true';
    throw failPrev(VALIDATION, `expected true or false after ${key}`);
  };

  const r: Rules = { side: '', entryConditions: [], exitConditions: [], positionSize: 0 };
  let v = optional('coin=');
  if (v !== undefined) {
    if (v === '') throw failPrev(VALIDATION, 'coin is missing: it must be one of BTC, ETH, SOL');
    if (!COINS.includes(v.toUpperCase())) throw failPrev(VALIDATION, `coin ${q(v)} is not one of BTC, ETH, SOL`);
    r.coin = v.toUpperCase();
  }
  v = optional('type=');
  if (v !== undefined) {
    if (v === '') throw failPrev(VALIDATION, 'marketType is missing: it must be one of 5m, 15m, 1h, 4h, 24h');
    const mt = parseMarketType(v);
    if (!mt) throw failPrev(VALIDATION, `marketType ${q(v)} is not one of 5m, 15m, 1h, 4h, 24h`);
    r.marketType = mt;
  }
  r.side = required('side=', 'INVALID_SIDE', 'UP or DOWN');
  if (r.side !== 'UP' && r.side !== 'DOWN') throw failPrev('INVALID_SIDE', `side ${q(r.side)} is not one of UP, DOWN${caseHint(r.side, ['UP', 'DOWN'])}`);
  const keyword = (kw: string) => {
    if (peek() !== kw) throw fail(VALIDATION, `expected ${q(kw)}`);
    pos++;
  };
  const condition = (list: string): Condition => {
    const field = peek();
    if (field === '' || field.endsWith(':') || field.includes('=')) throw fail(VALIDATION, `expected an ${list} condition such as "price_up < 0.35"`);
    if (!oneOf(field, FIELDS)) throw fail('INVALID_FIELD', `${q(field)} is not a condition field: use one of ${FIELDS.join(', ')}${caseHint(field, FIELDS)}`);
    pos++;
    const op = peek();
    if (!oneOf(op, OPERATORS)) throw fail('INVALID_OPERATOR', `expected an operator after ${field}: one of ${OPERATORS.join(', ')}`);
    pos++;
    const value = number(peek(), `${field} ${op}`) + 0; // -0 becomes 0, as the server canonicalizes
    pos++;
    return { field, operator: op, value };
  };
  const conditions = (list: string, joiner: string, wrong: string): Condition[] => {
    const cs: Condition[] = [];
    for (;;) {
      cs.push(condition(list));
      if (peek() === joiner) pos++;
      else if (peek() === wrong) {
        if (list === 'entry') throw fail(VALIDATION, 'entry conditions must all hold: join them with "and"');
        throw fail(VALIDATION, 'exit conditions are alternatives (any one exits): join them with "or"');
      } else return cs;
    }
  };
  keyword('entry:');
  r.entryConditions = conditions('entry', 'and', 'or');
  keyword('exit:');
  r.exitConditions = conditions('exit', 'or', 'and');
  r.positionSize = number(required('size=', VALIDATION, 'a number of shares'), 'size=');
  v = optional('maxloss=');
  if (v !== undefined) {
    r.maxLossPercent = number(v, 'maxloss=');
    if (r.maxLossPercent === 0) throw failPrev(VALIDATION, 'maxloss=0 is out of range: it must be between 1 and 100, or left out for the default 50');
  }
  v = optional('order=');
  if (v !== undefined) {
    if (!oneOf(v, ORDER_TYPES)) throw failPrev('INVALID_ORDER_TYPE', `order ${q(v)} is not one of MARKET, LIMIT, GTC${caseHint(v, ORDER_TYPES)}`);
    r.orderType = v;
  }
  v = optional('postonly=');
  if (v !== undefined) {
    r.postOnly = boolean(v, 'postonly=');
    if (r.orderType !== 'GTC') throw failPrev(VALIDATION, 'postonly applies only with order=GTC (a resting order)');
  }
  const offset = optionalNumber('offset=');
  const cancel = optionalNumber('cancel=');
  v = optional('queue=');
  if (v !== undefined) {
    r.queueModel = v.toUpperCase();
    if (!oneOf(r.queueModel, QUEUE_MODELS)) throw failPrev(VALIDATION, `queue ${q(v)} is not one of risk_averse, front`);
  }
  v = optional('rebates=');
  if (v !== undefined) r.includeRebates = boolean(v, 'rebates=');
  v = optional('fees=');
  if (v !== undefined) {
    r.feeModel = v.toUpperCase();
    if (!oneOf(r.feeModel, FEE_MODELS)) throw failPrev(VALIDATION, `fees ${q(v)} is not one of none, market, custom`);
  }
  const rate = optionalNumber('feerate=');
  const exponent = optionalNumber('feeexp=');
  const latency = optionalNumber('latency=');
  const cooldown = optionalNumber('cooldown=');
  const maxEntries = optionalNumber('maxentries=');
  if (pos < w.length) {
    throw fail(
      VALIDATION,
      `unexpected ${q(peek())} after the strategy: the code ends with size=, maxloss=, order=, postonly=, offset=, cancel=, queue=, rebates=, ` +
        'fees=, feerate=, feeexp=, latency=, cooldown= and maxentries=, in this order',
    );
  }
  const problem = validate(r, { rate, exponent, latency, cooldown, maxEntries, offset, cancel });
  if (problem) throw codeError(VALIDATION, `: ${codeWords(problem)}`);
  if (r.coin && r.marketType && (r.marketType === '4hr' || r.marketType === '24hr') && r.coin !== 'BTC') {
    throw codeError(VALIDATION, `: ${r.marketType} markets exist for BTC only; ${r.coin} has 5m, 15m and 1hr markets`);
  }
  // Normalized, with the server's defaults; what is at its default is left out.
  r.maxLossPercent ??= 50;
  r.orderType ??= 'MARKET';
  if (rate !== undefined) r.feeRate = rate + 0;
  if (exponent) r.feeExponent = exponent;
  if (r.feeModel === 'CUSTOM' && !r.feeExponent) r.feeExponent = 1;
  if (latency) r.latencyMs = latency;
  if (cooldown) r.reentryCooldownMs = cooldown;
  if (maxEntries) r.maxEntriesPerMarket = maxEntries;
  if (offset) r.limitOffsetTicks = offset;
  if (cancel) r.cancelAfterMs = cancel;
  if (r.orderType === 'GTC' && !r.queueModel) r.queueModel = 'RISK_AVERSE';
  if (!r.postOnly) delete r.postOnly;
  if (!r.includeRebates) delete r.includeRebates;
  return r;
}

/** Go's replay.FormatNum, as the validator's messages write numbers: formatNumber's text (an exponent only below 1e-6 or
 * from 1e21), NaN as NaN and −0 as -0. */
const num = (x: number): string => (Number.isNaN(x) ? 'NaN' : Object.is(x, -0) ? '-0' : formatNumber(x));

/** The replay validator's first problem with the parsed strategy, in the request body's words, or ''. */
function validate(
  r: Rules,
  n: { rate?: number; exponent?: number; latency?: number; cooldown?: number; maxEntries?: number; offset?: number; cancel?: number },
): string {
  for (const [name, cs] of [
    ['entryConditions', r.entryConditions],
    ['exitConditions', r.exitConditions],
  ] as const) {
    if (cs.length > MAX_CONDITIONS) return `${name} has ${cs.length} conditions: at most ${MAX_CONDITIONS} are allowed`;
  }
  const sizeRule = 'it must be between 1 and 10000 shares';
  const ps = r.positionSize;
  if (ps === 0) return `positionSize is missing or 0: ${sizeRule}`;
  if (ps < 1 || ps > 10000) return `positionSize ${num(ps)} is out of range: ${sizeRule}`;
  const ml = r.maxLossPercent;
  if (ml !== undefined && (ml < 1 || ml > 100)) return `maxLossPercent ${num(ml)} is out of range: it must be between 1 and 100, or left out for the default 50`;

  const custom = r.feeModel === 'CUSTOM';
  const rateRule = "it must be between 0 and 1 (0.07 is Polymarket's crypto rate)";
  if (n.rate !== undefined && !custom) return 'feeRate applies only with feeModel CUSTOM (MARKET takes the market\'s own rate)';
  if (n.rate === undefined && custom) return `feeRate is missing: feeModel CUSTOM needs a rate; ${rateRule}`;
  if (n.rate !== undefined && (n.rate < 0 || n.rate > 1)) return `feeRate ${num(n.rate)} is out of range: ${rateRule}`;
  const whole = (x: number, lo: number, hi: number) => Number.isInteger(x) && x >= lo && x <= hi;
  if (n.exponent !== undefined) {
    if (!custom) return "feeExponent applies only with feeModel CUSTOM (MARKET takes the market's own exponent)";
    if (!whole(n.exponent, 1, 4)) return `feeExponent ${num(n.exponent)} is not allowed: it must be a whole number from 1 to 4, or left out for the default 1`;
  }
  const lat = n.latency ?? 0;
  if (!whole(lat, 0, 60000)) return `latencyMs ${num(lat)} is not allowed: it must be a whole number of milliseconds from 0 to 60000`;

  const gtc = r.orderType === 'GTC';
  const named = r.orderType ? `this request's orderType is ${r.orderType}` : "this request's orderType is MARKET (the default)";
  const rules: [string, number | undefined, number, number, boolean, string][] = [
    ['reentryCooldownMs', n.cooldown, 0, 86_400_000, false, 'it must be a whole number of milliseconds from 0 to 86400000 (a day)'],
    ['maxEntriesPerMarket', n.maxEntries, 1, 10_000, false, 'it must be a whole number from 1 to 10000, or left out for no limit'],
    ['limitOffsetTicks', n.offset, 0, 50, true, 'it must be a whole number of ticks from 0 to 50'],
    ['cancelAfterMs', n.cancel, 1, 86_400_000, true, 'it must be a whole number of milliseconds from 1 to 86400000, or left out to rest until filled or the market ends'],
  ];
  for (const [name, v, lo, hi, gtcOnly, rule] of rules) {
    if (v !== undefined) {
      if (gtcOnly && !gtc) return `${name} applies only with orderType GTC (a resting order); ${named}`;
      if (!whole(v, lo, hi)) return `${name} ${num(v)} is not allowed: ${rule}`;
    }
  }
  if (r.queueModel && !gtc) return `queueModel applies only with orderType GTC (a resting order); ${named}`;
  if (r.includeRebates && !gtc) return `includeRebates applies only with orderType GTC (a resting order: only maker fills earn rebates); ${named}`;
  return '';
}
