/**
 * A seeded fuzzer over every operation that takes a body and over the /v4 `query` parameter, against a real
 * listener on a populated workspace. For each request: no 5xx, an answer within 2 s, and after any refusal the
 * workspace files byte for byte as before. NFV_FUZZ_CASES sets the number of requests (2,000 by default, as CI
 * runs it), NFV_FUZZ_SEED the seed; a failure prints the seed and the request so that it can be replayed.
 */
import t from 'tap';
import { OPERATIONS } from '../../src/ops/table.js';
import { fixture, rawRequest, scratch, seeded, snapshot, startServer } from '../helpers.js';
import { catalog, changed, report, user, web } from '../inventory/data.js';

const CASES = Number(process.env.NFV_FUZZ_CASES ?? 2000);
const SEED = Number(process.env.NFV_FUZZ_SEED ?? 20261123);
const SLOW_MS = 2000;

/** The tests' seeded generator, so that a run can be replayed exactly. */
function generator(seed: number) {
  const g = seeded(seed);
  return { ...g, next: g.rnd };
}
type Rng = ReturnType<typeof generator>;

const STRINGS = [
  '',
  '.',
  '..',
  'a/b',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '-1',
  '0x10',
  '1e999',
  '9223372036854775808',
  '2020-13-01',
  '2021-02-30T00:00:00Z',
  '2025-01-01T00:00:00Z',
  '10.0.0.1',
  '10.0.0.-1',
  '*',
  'FIREWALL',
  'DENY',
  'ALLOW',
  '^(.|.)*Z$',
  '(a+)+$',
  '[',
  '\\',
  '(?i)X',
  '\u0000',
  '\ud800',
  'é',
  '𝄞',
  ' ',
  'x'.repeat(5000),
  'TCP',
  'nginx',
  'a.example',
];
const KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'id',
  'name',
  'extra',
  'graph',
  'node',
  'certname',
  'payload',
  'query',
  'limit',
];

function randomScalar(r: Rng): unknown {
  switch (r.int(6)) {
    case 0:
      return r.pick(STRINGS);
    case 1:
      return r.pick([0, 1, -1, 1.5, 2 ** 31, 2 ** 53, 2 ** 63, 1e308, -1e308]);
    case 2:
      return r.chance(0.5);
    case 3:
      return null;
    case 4:
      return r.chance(0.5) ? [] : {};
    default:
      return r.pick(STRINGS) + r.int(1000);
  }
}

function deep(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let k = 0; k < depth; k++) v = k % 2 ? { k: v } : [v];
  return v;
}

/** The objects and arrays of a JSON value down to 20 levels, to pick one to change (iterative: values get deep). */
function containers(value: unknown): (Record<string, unknown> | unknown[])[] {
  const out: (Record<string, unknown> | unknown[])[] = [];
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null || depth > 20) continue;
    out.push(v as Record<string, unknown>);
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return out;
}

function mutateJson(r: Rng, seed: unknown): unknown {
  const value = structuredClone(seed);
  for (let n = 1 + r.int(3); n > 0; n--) {
    const targets = containers(value);
    const c = r.pick(targets);
    const keys = Object.keys(c);
    const key = keys.length ? r.pick(keys) : '0';
    switch (r.int(7)) {
      case 0:
        (c as Record<string, unknown>)[key] = randomScalar(r);
        break;
      case 1:
        if (Array.isArray(c)) c.splice(Number(key), 1);
        else delete (c as Record<string, unknown>)[key];
        break;
      case 2:
        // Own keys such as __proto__ or constructor, as JSON.parse would make them (on objects only).
        if (Array.isArray(c)) c.push(randomScalar(r));
        else
          Object.defineProperty(c, r.pick(KEYS), {
            value: randomScalar(r),
            enumerable: true,
            configurable: true,
            writable: true,
          });
        break;
      case 3:
        (c as Record<string, unknown>)[key] = deep(r.pick([10, 70, 3000]), randomScalar(r));
        break;
      case 4:
        if (Array.isArray(c)) c.push(...c.slice(0, 3));
        else (c as Record<string, unknown>)[key] = [(c as Record<string, unknown>)[key]];
        break;
      case 5:
        (c as Record<string, unknown>)[key] = r.pick(STRINGS);
        break;
      default:
        (c as Record<string, unknown>)[key] = { [r.pick(KEYS)]: (c as Record<string, unknown>)[key] };
    }
  }
  return value;
}

/** Byte-level damage for text bodies: cuts, repeats, stray markup, a DOCTYPE, invalid UTF-8, deep nesting. */
function mutateText(r: Rng, text: string): Buffer {
  const bytes = Buffer.from(text);
  const at = r.int(bytes.length + 1);
  switch (r.int(7)) {
    case 0:
      return bytes.subarray(0, at);
    case 1:
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(r.int(bytes.length)), bytes.subarray(at)]);
    case 2:
      return Buffer.concat([
        bytes.subarray(0, at),
        Buffer.from(r.pick(['<', '>', '"', '&', '<a>', '</x>', '&lol;', '<![CDATA[', ']]>'])),
        bytes.subarray(at),
      ]);
    case 3:
      return Buffer.concat([Buffer.from('<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'), bytes]);
    case 4:
      return Buffer.concat([
        bytes.subarray(0, at),
        Buffer.from([r.pick([0xff, 0xc3, 0xed, 0x80])]),
        bytes.subarray(at),
      ]);
    case 5:
      return Buffer.concat([
        bytes.subarray(0, at),
        Buffer.from('<a>'.repeat(200) + '</a>'.repeat(200)),
        bytes.subarray(at),
      ]);
    default:
      return Buffer.from(text.replace(/"[^"]*"/, `"${r.pick(STRINGS)}"`));
  }
}

const FIELDS = [
  'certname',
  'type',
  'title',
  'tag',
  'tags',
  'exported',
  'file',
  'line',
  'environment',
  'resource',
  'parameters',
  'hash',
  'status',
  'report',
  'timestamp',
  'message',
  'new_value',
  'containment_path',
  'latest_report?',
  'node_state',
  'producer_timestamp',
  'parameters.ensure',
  'parameters.constructor',
  'constructor',
  '__proto__',
  'toString',
  ['parameter', 'port'],
  ['parameter', '__proto__'],
  7,
  null,
];
const OPS = [
  '=',
  '<',
  '>',
  '<=',
  '>=',
  '~',
  '~>',
  'null?',
  'and',
  'or',
  'not',
  'in',
  'extract',
  'subquery',
  'nope',
  'AND',
];

function randomAst(r: Rng, depth = 0): unknown {
  const op = r.pick(depth > 4 ? OPS.slice(0, 8) : OPS);
  switch (op) {
    case 'and':
    case 'or':
    case 'AND':
      return [op, ...Array.from({ length: r.int(4) }, () => randomAst(r, depth + 1))];
    case 'not':
      return ['not', randomAst(r, depth + 1)];
    case 'in':
      return r.chance(0.5)
        ? ['in', r.pick(FIELDS), ['array', Array.from({ length: r.int(4) }, () => randomScalar(r))]]
        : [
            'in',
            r.pick(FIELDS),
            [
              'extract',
              r.pick(FIELDS),
              [`select_${r.pick(['resources', 'reports', 'events', 'nodes', 'constructor'])}`, randomAst(r, depth + 1)],
            ],
          ];
    case 'extract':
      return [
        'extract',
        r.chance(0.5) ? [r.pick(FIELDS), ['function', r.pick(['count', 'avg', 'toString', 'max'])]] : r.pick(FIELDS),
        randomAst(r, depth + 1),
      ];
    case 'subquery':
      return ['subquery', r.pick(['resources', 'reports', 'events', 'catalogs', '__proto__']), randomAst(r, depth + 1)];
    default:
      return [op, r.pick(FIELDS), r.chance(0.3) && op === '~' ? r.pick(STRINGS.slice(21, 27)) : randomScalar(r)];
  }
}

const QUERY_ENDPOINTS = [
  '/v4/resources',
  '/v4/resources/Service',
  '/v4/resources/Service/nginx',
  '/v4/reports',
  '/v4/events',
  '/v4/event-counts?summarize_by=resource',
  '/v4/aggregate-event-counts?summarize_by=certname',
  '/v4/reports/x/events',
];

function pagingParams(r: Rng): string {
  const parts: string[] = [];
  if (r.chance(0.3)) parts.push(`limit=${encode(String(randomScalar(r)))}`);
  if (r.chance(0.2)) parts.push(`offset=${encode(String(randomScalar(r)))}`);
  if (r.chance(0.2)) {
    const order = r.chance(0.5) ? [{ field: r.pick(FIELDS), order: r.pick(['asc', 'desc', 'up']) }] : randomScalar(r);
    parts.push(`order_by=${encode(JSON.stringify(order))}`);
  }
  if (r.chance(0.1))
    parts.push(
      `counts_filter=${encode(JSON.stringify(['>', r.pick(['failures', 'constructor', 'x']), randomScalar(r)]))}`,
    );
  if (r.chance(0.1)) parts.push(`${r.pick(KEYS)}=1`);
  return parts.join('&');
}

/** encodeURIComponent, with a lone surrogate sent as its (invalid) UTF-8 bytes instead of throwing. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return '%ED%A0%80';
  }
}

const command = (name: string, version: number, payload: unknown) => ({ command: name, version, payload });

t.test(`fuzz: ${CASES} requests (seed ${SEED})`, async (t) => {
  const s = await startServer(await scratch(t));
  t.teardown(s.close);
  const send = (method: string, target: string, body?: Buffer) =>
    rawRequest(
      s.url,
      method,
      target,
      body,
      body ? { 'Content-Type': body[0] === 0x3c ? 'application/xml' : 'application/json' } : {},
    );
  const graphs = JSON.parse(await fixture('graphs.json'));
  const nfvXml = await fixture('nfv.xml');
  const property = { name: 'IsolationProperty', graph: 1, src: '10.0.0.1', dst: '20.0.0.1' };
  const rule = { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' };
  const fwNode = {
    name: '30.0.0.1',
    functionalType: 'FIREWALL',
    configuration: { name: 'c', firewall: { defaultAction: 'DENY', elements: [rule] } },
  };
  const setup: [string, string, unknown][] = [
    ['POST', '/adp/graphs', graphs],
    ['POST', '/adp/requirements', { property: [property] }],
    ['POST', '/adp/substrates', undefined],
    ['POST', '/adp/substrates/1/hosts', { host: [{ name: 'h1', nodeRef: [{ node: '10.0.0.1' }] }, { name: 'h2' }] }],
    ['POST', '/fwd/nodes', fwNode],
    ['POST', '/v4/commands', command('replace catalog', 9, catalog('a.example', '2025-01-01T00:00:00Z', [web, user]))],
    [
      'POST',
      '/v4/commands',
      command('store report', 8, report('a.example', '2025-01-01T10:00:00Z', [changed('nginx')])),
    ],
  ];
  for (const [method, target, body] of setup) {
    const answer = await send(method, target, body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
    t.ok(answer.status < 300, `setup ${method} ${target}: ${answer.status}`);
  }
  // The first simulation starts the solver thread and Z3 (and, under the test runner, compiles the engine there):
  // a one-time cost that the 2 s bound is not about.
  t.equal((await send('POST', '/adp/simulations?store=false', Buffer.from(nfvXml))).status, 200, 'solver warmed up');
  /** A valid body per path template, which the fuzzer damages. */
  const seeds: Record<string, unknown> = {
    '/adp/requirements': { property: [property] },
    '/adp/requirements/{rid}': { property: [property] },
    '/adp/requirements/{rid}/properties': property,
    '/adp/requirements/{rid}/properties/{pid}': property,
    '/adp/simulations': nfvXml,
    '/adp/venvironment/generateFiles': nfvXml,
    '/adp/substrates/{sid}/hosts': { host: [{ name: 'h3', cpu: 4 }] },
    '/adp/substrates/{sid}/hosts/{hid}': { name: 'h2', cpu: 8 },
    '/adp/substrates/{sid}/connections': { connection: [{ sourceHost: 'h1', destHost: 'h2', avgLatency: 3 }] },
    '/adp/graphs': graphs,
    '/adp/graphs/{gid}': graphs.graph[0],
    '/adp/graphs/{gid}/nodes': { name: '40.0.0.1', functionalType: 'FORWARDER', neighbour: [{ name: '10.0.0.1' }] },
    '/adp/graphs/{gid}/nodes/{nid}': graphs.graph[0].node[0],
    '/adp/graphs/{gid}/nodes/{nid}/neighbours': { name: '20.0.0.1' },
    '/adp/graphs/{gid}/nodes/{nid}/configuration/{cid}': graphs.graph[0].node[0].configuration,
    '/adp/graphs/{gid}/constraints': { NodeConstraints: {}, LinkConstraints: {} },
    '/fwd/nodes': fwNode,
    '/fwd/nodes/{nid}': fwNode,
    '/fwd/nodes/{nid}/configuration': fwNode.configuration,
    '/fwd/nodes/{nid}/configuration/firewall/{eid}': { ...rule, id: 1 },
    '/v4/commands': command('replace catalog', 9, catalog('b.example', '2025-02-01T00:00:00Z', [web])),
  };
  const reportSeed = command(
    'store report',
    8,
    report('b.example', '2025-02-01T10:00:00Z', [changed('nginx', 'failure')]),
  );
  const deactivateSeed = command('deactivate node', 3, {
    certname: 'b.example',
    producer_timestamp: '2025-03-01T00:00:00Z',
  });
  const bodyOps = OPERATIONS.filter((op) => op.body);
  const r = generator(SEED);
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  const idFor = (name: string) =>
    r.chance(0.85)
      ? name === 'hid'
        ? r.pick(['h1', 'h2'])
        : name === 'type'
          ? 'Service'
          : name === 'title'
            ? 'nginx'
            : '1'
      : encode(String(randomScalar(r))) || '%2e%2e';

  /** The workspace's files and bytes, as one text. */
  const state = async () => JSON.stringify([...(await snapshot(s.dir))]);
  let after: string | undefined;
  for (let k = 0; k < CASES; k++) {
    let method: string;
    let target: string;
    let body: Buffer | undefined;
    if (r.chance(0.5)) {
      const op = r.pick(bodyOps);
      method = op.method;
      target = op.path.replace(/\{(\w+)\}/g, (_, name: string) => idFor(name));
      if (op.path === '/adp/simulations') target += '?store=false&timeout=0.5';
      const seed =
        op.path === '/v4/commands'
          ? r.pick([seeds[op.path], reportSeed, deactivateSeed])
          : (seeds[op.path] ?? { query: randomAst(r), limit: randomScalar(r) });
      if (typeof seed === 'string') body = r.chance(0.9) ? mutateText(r, seed) : Buffer.from(seed);
      else
        body = r.chance(0.15)
          ? mutateText(r, JSON.stringify(seed))
          : Buffer.from(JSON.stringify(r.chance(0.9) ? mutateJson(r, seed) : seed));
    } else {
      method = 'GET';
      const endpoint = r.pick(QUERY_ENDPOINTS);
      const query = r.chance(0.1)
        ? String(randomScalar(r))
        : JSON.stringify(r.chance(0.2) ? mutateJson(r, randomAst(r)) : randomAst(r));
      target = `${endpoint}${endpoint.includes('?') ? '&' : '?'}query=${encode(query)}&${pagingParams(r)}`;
    }
    // After a refusal the workspace was read whole already and nothing wrote it since: that reading is the next
    // request's before (a write in between would then show as this request's change, so nothing is missed).
    const before = after ?? (await state());
    const started = performance.now();
    const answer = await send(method, target, body);
    const ms = performance.now() - started;
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    const shown = `#${k} ${method} ${target.slice(0, 160)} ${body ? body.toString('utf8', 0, 160) : ''}`;
    if (answer.status >= 500) failures.push(`${answer.status} ${answer.text.slice(0, 200)} for ${shown}`);
    if (ms > SLOW_MS) failures.push(`${ms.toFixed(0)} ms for ${shown}`);
    after = undefined;
    if (answer.status >= 400) {
      after = await state();
      if (after !== before) failures.push(`refused (${answer.status}) but changed the workspace: ${shown}`);
    }
  }
  t.comment(
    `statuses: ${[...statuses]
      .sort((a, b) => a[0] - b[0])
      .map(([status, n]) => `${status}×${n}`)
      .join(' ')}`,
  );
  t.same(
    failures.slice(0, 10),
    [],
    `no 5xx, none over ${SLOW_MS} ms, no refusal that changed the workspace (seed ${SEED})`,
  );
  t.ok([...statuses.values()].reduce((a, b) => a + b, 0) >= CASES, `${CASES} requests sent`);
});
