// strategy_code, the one-line text form of a strategy (jobs/strategy/code.go):
//   [coin=C] [type=T] side=S entry: COND {and COND} exit: COND {or COND} size=N [maxloss=N] [order=O]
// The server is the authority (POST /v1/backtest-ai/run parses it); this
// copy lets the builder and the code box edit the same rules.

export const FIELDS = ['price_up', 'price_down', 'coin_price', 'spread', 'time_remaining_pct'] as const;
export const OPERATORS = ['<', '>', '<=', '>=', '==', 'crosses_above', 'crosses_below'] as const;

export interface Condition {
  field: string;
  operator: string;
  value: number;
}

export interface Rules {
  coin?: string;
  marketType?: string;
  side: string;
  entryConditions: Condition[];
  exitConditions: Condition[];
  positionSize: number;
  maxLossPercent?: number;
  orderType?: string;
}

function num(x: number): string {
  return String(x);
}

export function formatCode(r: Rules): string {
  const parts: string[] = [];
  if (r.coin) parts.push(`coin=${r.coin}`);
  if (r.marketType) parts.push(`type=${r.marketType}`);
  const conds = (cs: Condition[], joiner: string) => cs.map((c) => `${c.field} ${c.operator} ${num(c.value)}`).join(` ${joiner} `);
  parts.push(`side=${r.side}`, 'entry:', conds(r.entryConditions, 'and'), 'exit:', conds(r.exitConditions, 'or'), `size=${num(r.positionSize)}`);
  if (r.maxLossPercent) parts.push(`maxloss=${num(r.maxLossPercent)}`);
  if (r.orderType) parts.push(`order=${r.orderType}`);
  return parts.filter((p) => p !== '').join(' ');
}

const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

export function parseCode(code: string): Rules {
  const w = code.trim().split(/\s+/).filter(Boolean);
  let i = 0;
  const fail = (msg: string): never => {
    throw new Error(`word ${i + 1}${w[i] ? ` ("${w[i]}")` : ''}: ${msg}`);
  };
  const opt = (key: string): string | undefined => (w[i]?.startsWith(key) ? w[i++].slice(key.length) : undefined);
  const number = (v: string, what: string): number => {
    if (!DECIMAL.test(v)) fail(`${what} needs a number`);
    return Number(v);
  };
  if (w.length === 0) fail('the code is empty');
  const r: Rules = { side: '', entryConditions: [], exitConditions: [], positionSize: 0 };
  r.coin = opt('coin=');
  r.marketType = opt('type=');
  const side = opt('side=');
  if (side !== 'UP' && side !== 'DOWN') fail('expected side=UP or side=DOWN');
  r.side = side as string;
  const conditions = (joiner: string, until: string): Condition[] => {
    const out: Condition[] = [];
    for (;;) {
      const [f, op, v] = [w[i], w[i + 1], w[i + 2]];
      if (!(FIELDS as readonly string[]).includes(f)) fail(`expected a field (${FIELDS.join(', ')})`);
      i++;
      if (!(OPERATORS as readonly string[]).includes(op)) fail(`expected an operator (${OPERATORS.join(' ')})`);
      i++;
      out.push({ field: f, operator: op, value: number(v ?? '', f) });
      i++;
      if (w[i] === joiner) {
        i++;
        continue;
      }
      if (w[i] === until || until === '' || w[i]?.includes('=')) return out;
      fail(`expected "${joiner}" or "${until || 'size='}"`);
    }
  };
  if (w[i] !== 'entry:') fail('expected "entry:"');
  i++;
  r.entryConditions = conditions('and', 'exit:');
  if (w[i] !== 'exit:') fail('expected "exit:"');
  i++;
  r.exitConditions = conditions('or', '');
  const size = opt('size=');
  if (size === undefined) fail('expected size=');
  r.positionSize = number(size as string, 'size=');
  const ml = opt('maxloss=');
  if (ml !== undefined) r.maxLossPercent = number(ml, 'maxloss=');
  const ot = opt('order=');
  if (ot !== undefined) {
    if (ot !== 'MARKET' && ot !== 'LIMIT') fail('order must be MARKET or LIMIT');
    r.orderType = ot;
  }
  if (i < w.length) fail('unexpected words after the strategy');
  if (!r.coin) delete r.coin;
  if (!r.marketType) delete r.marketType;
  return r;
}
