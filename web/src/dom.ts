// A tiny element builder: text goes in as text nodes (never as HTML).

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'testid') el.setAttribute('data-testid', String(v));
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
      else if (k === 'value' && 'value' in el) (el as HTMLInputElement).value = String(v);
      else if (k === 'checked') (el as HTMLInputElement).checked = Boolean(v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let ids = 0;
/** A labelled control: the label names it for screen readers and tests. */
export function field(label: string, control: HTMLElement, hint?: string | HTMLElement): HTMLElement {
  const id = control.id || `f${++ids}`;
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('small', null, hint) : null);
}

export function select(testid: string, options: [string, string][], value?: string, attrs: Attrs = {}): HTMLSelectElement {
  const s = h('select', { testid, ...attrs }, ...options.map(([v, t]) => h('option', { value: v }, t)));
  if (value !== undefined) setChoice(s, value);
  return s;
}

/** Picks the box's choice of that value. A value the box has no choice for
 * (a stale or hand-edited address, a saved form of an older version)
 * leaves the box as it is, not blank with the value ''. */
export function setChoice(s: HTMLSelectElement, value: string): void {
  if ([...s.options].some((o) => o.value === value)) s.value = value;
}

/** Names each body cell after its column heading (data-label), which the
 * phone layout shows beside the value when a row becomes a card. */
export function labelCells(table: HTMLTableElement): void {
  const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent?.trim() ?? '');
  for (const tr of table.querySelectorAll('tbody tr')) {
    [...(tr as HTMLTableRowElement).cells].forEach((td, i) => {
      if (heads[i] && td.colSpan === 1) td.setAttribute('data-label', heads[i]);
    });
  }
}

/** A column heading; numeric columns are right-aligned like their cells. */
export function th(label: string, numeric = false): HTMLTableCellElement {
  return h('th', { scope: 'col', class: numeric ? 'num' : null }, label);
}

/** A table cell holding a time: kept on one line, and a whole line of a phone's card. */
export function tdTime(text: string): HTMLTableCellElement {
  return h('td', { class: 'time wide' }, text);
}

/** A table cell; numeric cells are right-aligned in tabular figures. */
export function td(content: Node | string, numeric = false): HTMLTableCellElement {
  return h('td', { class: numeric ? 'num' : null }, content);
}

/** One figure of a figures grid (dl.figures): its label above its value. */
export function fig(label: string, value: string | Node, testid?: string, cls?: string): HTMLElement {
  return h('div', { class: cls ?? null }, h('dt', null, label), h('dd', { testid: testid ?? null }, value));
}

/** Marks a refused form control (aria-invalid) and gives it the keyboard,
 * as every form does with the field the API named. */
export function markInvalid(c: HTMLElement): void {
  c.setAttribute('aria-invalid', 'true');
  c.focus();
}

/** Clears every aria-invalid mark within the element: a form's fresh try
 * starts with no control marked refused. */
export function unmarkInvalid(el: ParentNode): void {
  el.querySelectorAll('[aria-invalid]').forEach((x) => x.removeAttribute('aria-invalid'));
}

/**
 * For a button about to be disabled while its work runs: a disabled button
 * loses the keyboard, which falls to the page's top (the next Tab starts
 * again at the navigation). Call the answer when the work is done: the
 * keyboard comes back to the button (or, where it has gone, to the
 * fallback), unless it has moved on meanwhile (a control an error marked).
 */
export function holdFocus(b: HTMLElement, fallback?: () => HTMLElement | null): () => void {
  const had = document.activeElement === b;
  return () => {
    const now = document.activeElement;
    if (!had || (now !== null && now !== document.body && now.isConnected)) return;
    const usable = (x: HTMLElement | null | undefined): x is HTMLElement =>
      !!x && x.isConnected && !(x as HTMLButtonElement).disabled && !x.hidden && x.getClientRects().length > 0;
    const target = usable(b) ? b : fallback?.();
    if (usable(target)) target.focus();
  };
}
