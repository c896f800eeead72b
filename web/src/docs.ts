// The API reference, drawn from /openapi.json with no third-party viewer:
// it runs under the same strict CSP as the dashboard and needs no internet.
import './docs.css';
import { clear, h } from './dom';

type Schema = Record<string, any>;
const root = document.getElementById('docs') as HTMLElement;

/**
 * The schema s names: its $ref followed, and an object answered as null
 * (anyOf or oneOf the object and null) taken as the object, so that its
 * fields are listed as those of any other object.
 */
function resolve(doc: any, s: Schema | undefined): Schema | undefined {
  let x = s;
  for (let i = 0; x && i < 20; i++) {
    const alt = x.anyOf ?? x.oneOf;
    const some = Array.isArray(alt) ? alt.filter((y: Schema) => y.type !== 'null') : [];
    if (x.$ref) x = doc.components?.schemas?.[String(x.$ref).split('/').pop() as string];
    else if (some.length === 1) x = some[0];
    else break;
  }
  return x;
}

/** The schema's types without "null", and whether null is among them. */
function types(s: Schema): { list: string[]; nullable: boolean } {
  const raw: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  return { list: raw.filter((x) => x !== 'null'), nullable: raw.includes('null') || s.nullable === true };
}

/**
 * A schema's type in words: "array of ReplayCondition", "integer (int64)".
 * Null is left out: in a request a null array is the same as none (Go's nil
 * slice); a response's nullable fields say "or null" (withNull).
 */
function typeOf(doc: any, s: Schema | undefined, withNull = false): string {
  if (!s) return '';
  if (s.$ref) return String(s.$ref).split('/').pop() as string;
  for (const k of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[k])) {
      const parts = s[k].filter((x: Schema) => x.type !== 'null').map((x: Schema) => typeOf(doc, x));
      const n = s[k].some((x: Schema) => x.type === 'null');
      return parts.join(' or ') + (n && withNull ? ' or null' : '');
    }
  }
  const { list, nullable } = types(s);
  let t = list.map((x) => (x === 'array' ? `array of ${typeOf(doc, s.items) || 'any'}` : x)).join(' or ');
  if (!t && s.items) t = `array of ${typeOf(doc, s.items)}`;
  if (s.format && !list.includes('array')) t += ` (${s.format})`;
  if (nullable && withNull) t += ' or null';
  return t || 'any';
}

const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** Ranges, default, allowed values and examples of a schema, as text. */
function constraints(s: Schema | undefined): HTMLElement[] {
  if (!s || s.$ref) return [];
  const out: HTMLElement[] = [];
  const line = (label: string, value: string) => out.push(h('div', { class: 'constraint' }, h('span', { class: 'k' }, label), ' ', h('code', null, value)));
  const lo = s.minimum ?? s.exclusiveMinimum;
  const hi = s.maximum ?? s.exclusiveMaximum;
  if (lo !== undefined && hi !== undefined) line('range', `${lo} to ${hi}`);
  else if (lo !== undefined) line(s.exclusiveMinimum !== undefined ? 'more than' : 'minimum', String(lo));
  else if (hi !== undefined) line(s.exclusiveMaximum !== undefined ? 'less than' : 'maximum', String(hi));
  const span = (lo: number | undefined, hi: number | undefined) => (lo !== undefined && hi !== undefined ? `${lo} to ${hi}` : lo !== undefined ? `at least ${lo}` : `at most ${hi}`);
  if (s.minItems !== undefined || s.maxItems !== undefined) line('items', span(s.minItems, s.maxItems));
  if (s.minLength !== undefined || s.maxLength !== undefined) line('length', span(s.minLength, s.maxLength));
  if (s.pattern) line('pattern', s.pattern);
  if (s.enum) line('one of', s.enum.map(show).join(', '));
  if (s.default !== undefined) line('default', show(s.default));
  const ex = s.examples ?? (s.example !== undefined ? [s.example] : undefined);
  if (Array.isArray(ex) && ex.length) line(ex.length > 1 ? 'examples' : 'example', ex.map(show).join(', '));
  return out;
}

const req = () => h('span', { class: 'req' }, 'required');
const opt = () => h('span', { class: 'opt' }, 'optional');

function schemaTable(doc: any, s: Schema | undefined, response: boolean, depth = 0): HTMLElement | null {
  const r = resolve(doc, s);
  const target = r && types(r).list.includes('array') ? resolve(doc, r.items) : r;
  if (!target?.properties || depth > 3) return null;
  const required = new Set(target.required ?? []);
  return h(
    'table',
    { class: 'schema' },
    h('thead', null, h('tr', null, ['Field', 'Type', response ? 'Description' : 'Values', response ? '' : 'Description'].filter(Boolean).map((t) => h('th', null, t)))),
    h(
      'tbody',
      null,
      Object.entries(target.properties as Record<string, Schema>).map(([name, p]) => {
        const nested = schemaTable(doc, p, response, depth + 1);
        const desc = h('td', null, p.description ?? '', nested ? h('details', null, h('summary', null, `${typeOf(doc, p)} fields`), nested) : null);
        return h(
          'tr',
          null,
          h('td', null, h('code', null, name), ' ', response ? null : required.has(name) ? req() : opt()),
          h('td', null, typeOf(doc, p, response)),
          response ? null : h('td', null, constraints(p)),
          desc,
        );
      }),
    ),
  );
}

function operation(doc: any, method: string, path: string, op: any): HTMLElement {
  const id = op.operationId ?? `${method}-${path}`;
  const params = (op.parameters ?? []).filter((p: any) => !p['x-hidden'] && p.name !== 'Accept');
  const body = op.requestBody?.content?.['application/json']?.schema;
  const security = (op.security ?? []).map((s: any) => Object.keys(s).join(' + ')).join(' or ');
  return h(
    'section',
    { class: 'op', id },
    h('h3', null, h('span', { class: `method ${method}` }, method.toUpperCase()), ' ', h('code', { class: 'path' }, breakable(path))),
    h('p', null, h('strong', null, op.summary ?? '')),
    op.description ? h('p', { class: 'desc' }, op.description) : null,
    security ? h('p', { class: 'auth' }, `Authentication: ${security}`) : h('p', { class: 'auth' }, 'No authentication'),
    params.length
      ? h(
          'table',
          { class: 'params' },
          h('thead', null, h('tr', null, ['Parameter', 'In', 'Type', 'Values', 'Description'].map((t) => h('th', null, t)))),
          h(
            'tbody',
            null,
            params.map((p: any) =>
              h(
                'tr',
                null,
                h('td', null, h('code', null, p.name), ' ', p.required ? req() : opt()),
                h('td', null, p.in),
                h('td', null, typeOf(doc, p.schema)),
                h('td', null, constraints(p.schema)),
                h('td', null, p.description ?? ''),
              ),
            ),
          ),
        )
      : null,
    body ? h('div', null, h('h4', null, 'Request body'), schemaTable(doc, body, false) ?? h('p', null, typeOf(doc, body)), examples(op.requestBody?.content?.['application/json'])) : null,
    h('h4', null, 'Responses'),
    h('ul', { class: 'responses' }, Object.entries(op.responses ?? {}).map(([code, r]: [string, any]) => {
      const s = r.content?.['application/json']?.schema;
      const t = schemaTable(doc, s, true);
      return h('li', null, h('code', null, code), ` ${r.description ?? ''}`, t ? h('details', null, h('summary', null, typeOf(doc, s) || 'body'), t) : null);
    })),
  );
}

/** A request body's examples, each as formatted JSON. */
function examples(media: any): HTMLElement | null {
  const ex: [string, unknown][] = media?.examples
    ? Object.entries(media.examples as Record<string, any>).map(([k, v]) => [v.summary ?? k, v.value])
    : media?.example !== undefined
      ? [['Example', media.example]]
      : [];
  if (!ex.length) return null;
  return h('div', { class: 'examples' }, ex.map(([title, v]) => h('details', null, h('summary', null, `Example: ${title}`), h('pre', null, JSON.stringify(v, null, 2)))));
}

/** A path that wraps only after its slashes, never inside a word. */
function breakable(path: string): (string | HTMLElement)[] {
  const out: (string | HTMLElement)[] = [];
  path.split('/').forEach((part, i) => {
    if (i > 0) out.push('/', h('wbr'));
    if (part) out.push(part);
  });
  return out;
}

/** Markets, the main product, first; then the other products; then account and sign-in. */
const TAG_ORDER = ['Markets', 'Exchange', 'Replay', 'Backtest AI', 'Account', 'Billing', 'Auth'];
const tagRank = (t: string) => {
  const i = TAG_ORDER.indexOf(t);
  return i < 0 ? TAG_ORDER.length : i;
};

async function main(): Promise<void> {
  const res = await fetch('/openapi.json');
  const doc = await res.json();
  const byTag = new Map<string, [string, string, any][]>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
    for (const m of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[m];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'Other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push([m, path, op]);
    }
  }
  const tags = [...byTag].sort(([a], [b]) => tagRank(a) - tagRank(b) || a.localeCompare(b));
  const nav = h(
    'nav',
    { 'aria-label': 'Endpoints' },
    h('p', null, h('a', { href: '/openapi.json' }, 'openapi.json'), ' · ', h('a', { href: '/app/' }, 'Dashboard')),
    h(
      'details',
      { class: 'toc', open: true },
      h('summary', null, 'Endpoints'),
      tags.map(([tag, ops]) =>
        h(
          'div',
          { 'data-tag': tag },
          h('h2', null, tag),
          h('ul', null, ops.map(([m, p, op]) => h('li', null, h('a', { href: `#${op.operationId ?? `${m}-${p}`}` }, h('span', { class: `method ${m}` }, m.toUpperCase()), ' ', h('span', { class: 'path' }, breakable(p)))))),
        ),
      ),
    ),
  );
  const content = h(
    'main',
    null,
    h('h1', null, `${doc.info?.title ?? 'API'} ${doc.info?.version ?? ''}`),
    h('p', null, doc.info?.description ?? ''),
    h('p', null, 'Errors use one envelope: {"success": false, "error": {"code", "message", "details"}, "timestamp"}.'),
    tags.map(([tag, ops]) => h('div', null, h('h2', null, tag), ops.map(([m, p, op]) => operation(doc, m, p, op)))),
  );
  // On a phone the endpoint list starts folded: the reference comes first.
  if (matchMedia('(max-width: 800px)').matches) nav.querySelector('details')?.removeAttribute('open');
  clear(root, h('div', { class: 'layout' }, nav, content));
  root.setAttribute('data-ready-ms', performance.now().toFixed(1)); // since navigation start
  root.setAttribute('data-ready', 'docs');
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

main().catch((e) => clear(root, h('p', { role: 'alert' }, `The API reference could not load: ${e}`)));
