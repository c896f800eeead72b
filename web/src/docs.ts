// The API reference, drawn from /openapi.json with no third-party viewer:
// it runs under the same strict CSP as the dashboard and needs no internet.
import './docs.css';
import { clear, h } from './dom';

type Schema = Record<string, any>;
const root = document.getElementById('docs') as HTMLElement;

function resolve(doc: any, s: Schema | undefined): Schema | undefined {
  let x = s;
  for (let i = 0; x && x.$ref && i < 20; i++) x = doc.components?.schemas?.[String(x.$ref).split('/').pop() as string];
  return x;
}

function typeOf(doc: any, s: Schema | undefined): string {
  if (!s) return '';
  if (s.$ref) return String(s.$ref).split('/').pop() as string;
  let t = Array.isArray(s.type) ? s.type.filter((x: string) => x !== 'null').join(' | ') + (s.type.includes('null') ? ' | null' : '') : (s.type ?? '');
  if (t === 'array') t = `array of ${typeOf(doc, s.items)}`;
  if (s.enum) t += ` (${s.enum.join(', ')})`;
  if (s.format) t += `, ${s.format}`;
  return t;
}

function schemaTable(doc: any, s: Schema | undefined, depth = 0): HTMLElement | null {
  const r = resolve(doc, s);
  const target = r?.type === 'array' ? resolve(doc, r.items) : r;
  if (!target?.properties || depth > 3) return null;
  const req = new Set(target.required ?? []);
  return h(
    'table',
    { class: 'schema' },
    h('tbody', null, Object.entries(target.properties as Record<string, Schema>).map(([name, p]) => {
      const nested = schemaTable(doc, p, depth + 1);
      return h('tr', null, h('td', null, h('code', null, name), req.has(name) ? h('span', { class: 'req' }, ' required') : null), h('td', null, typeOf(doc, p)), h('td', null, p.description ?? '', nested ? h('details', null, h('summary', null, 'fields'), nested) : null));
    })),
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
    h('h3', null, h('span', { class: `method ${method}` }, method.toUpperCase()), ' ', h('code', null, path)),
    h('p', null, h('strong', null, op.summary ?? '')),
    op.description ? h('p', { class: 'desc' }, op.description) : null,
    security ? h('p', { class: 'auth' }, `Authentication: ${security}`) : h('p', { class: 'auth' }, 'No authentication'),
    params.length
      ? h('table', { class: 'params' }, h('thead', null, h('tr', null, ['Parameter', 'In', 'Type', 'Description'].map((t) => h('th', null, t)))), h('tbody', null, params.map((p: any) => h('tr', null, h('td', null, h('code', null, p.name), p.required ? h('span', { class: 'req' }, ' required') : null), h('td', null, p.in), h('td', null, typeOf(doc, p.schema), p.schema?.default !== undefined ? `, default ${p.schema.default}` : '', p.schema?.minimum !== undefined ? `, ${p.schema.minimum} to ${p.schema.maximum ?? '…'}` : ''), h('td', null, p.description ?? '')))))
      : null,
    body ? h('div', null, h('h4', null, 'Request body'), schemaTable(doc, body) ?? h('p', null, typeOf(doc, body))) : null,
    h('h4', null, 'Responses'),
    h('ul', { class: 'responses' }, Object.entries(op.responses ?? {}).map(([code, r]: [string, any]) => {
      const s = r.content?.['application/json']?.schema;
      const t = schemaTable(doc, s);
      return h('li', null, h('code', null, code), ` ${r.description ?? ''}`, t ? h('details', null, h('summary', null, typeOf(doc, s) || 'body'), t) : null);
    })),
  );
}

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
  const nav = h('nav', { 'aria-label': 'Endpoints' }, h('p', null, h('a', { href: '/openapi.json' }, 'openapi.json'), ' · ', h('a', { href: '/app/' }, 'Dashboard')), [...byTag].map(([tag, ops]) => h('div', null, h('h2', null, tag), h('ul', null, ops.map(([m, p, op]) => h('li', null, h('a', { href: `#${op.operationId ?? `${m}-${p}`}` }, h('span', { class: `method ${m}` }, m.toUpperCase()), ' ', p)))))));
  const content = h(
    'main',
    null,
    h('h1', null, `${doc.info?.title ?? 'API'} ${doc.info?.version ?? ''}`),
    h('p', null, doc.info?.description ?? ''),
    h('p', null, 'Errors use one envelope: {"success": false, "error": {"code", "message", "details"}, "timestamp"}.'),
    [...byTag].map(([tag, ops]) => h('div', null, h('h2', null, tag), ops.map(([m, p, op]) => operation(doc, m, p, op)))),
  );
  clear(root, h('div', { class: 'layout' }, nav, content));
  root.setAttribute('data-ready-ms', performance.now().toFixed(1)); // since navigation start
  root.setAttribute('data-ready', 'docs');
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
}

main().catch((e) => clear(root, h('p', { role: 'alert' }, `The API reference could not load: ${e}`)));
