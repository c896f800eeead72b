// The strategy builder shared by the replay page (and the agent's
// settings): conditions with every field and operator, size, max loss,
// order type, fees and latency.
import { FIELDS, OPERATORS, type Condition } from './strategy';
import { field, h, select } from './dom';

export function conditionRow(testid: string, c: Condition, onChange: () => void, onRemove: () => void): HTMLElement {
  const f = select('', FIELDS.map((x): [string, string] => [x, x]), c.field, { name: 'field', 'aria-label': 'Field' });
  const op = select('', OPERATORS.map((x): [string, string] => [x, x]), c.operator, { name: 'operator', 'aria-label': 'Operator' });
  const v = h('input', { type: 'number', step: 'any', name: 'value', value: String(c.value), 'aria-label': 'Value', required: true });
  const rm = h('button', { type: 'button', class: 'link', 'aria-label': 'Remove this condition' }, 'Remove');
  const row = h('div', { class: 'cond', testid }, f, op, v, rm);
  for (const x of [f, op, v]) x.addEventListener('input', onChange);
  rm.addEventListener('click', onRemove);
  return row;
}

export function readRow(row: Element): Condition {
  const q = (n: string) => row.querySelector(`[name=${n}]`) as HTMLInputElement;
  return { field: q('field').value, operator: q('operator').value, value: Number(q('value').value) };
}

export interface ExecutionControls {
  el: HTMLElement;
  /** The optional request fields (DESIGN 6), only those that differ from the defaults. */
  read(): Record<string, unknown>;
}

/** Fees and latency: feeModel NONE | MARKET | CUSTOM (feeRate, feeExponent), latencyMs. */
export function executionControls(prefix: string): ExecutionControls {
  const model = select(`${prefix}-fee-model`, [['NONE', 'none'], ['MARKET', "the market's fee schedule"], ['CUSTOM', 'custom']], 'NONE');
  const rate = h('input', { type: 'number', min: '0', max: '1', step: 'any', value: '0.07', testid: `${prefix}-fee-rate` });
  const exp = h('input', { type: 'number', min: '1', max: '4', step: '1', value: '1', testid: `${prefix}-fee-exponent` });
  const latency = h('input', { type: 'number', min: '0', max: '60000', step: '1', value: '0', testid: `${prefix}-latency` });
  const custom = h('div', { class: 'row', hidden: true }, field('Fee rate (0 to 1)', rate), field('Fee exponent (1 to 4)', exp));
  model.addEventListener('change', () => (custom.hidden = model.value !== 'CUSTOM'));
  const el = h('fieldset', null, h('legend', null, 'Execution'), h('div', { class: 'row' }, field('Fees', model), field('Latency (ms)', latency, 'Orders fill on the first snapshot at least this late.')), custom);
  return {
    el,
    read() {
      const out: Record<string, unknown> = {};
      if (model.value !== 'NONE') out.feeModel = model.value;
      if (model.value === 'CUSTOM') {
        out.feeRate = Number(rate.value);
        out.feeExponent = Number(exp.value);
      }
      const l = Number(latency.value);
      if (l) out.latencyMs = l;
      return out;
    },
  };
}
