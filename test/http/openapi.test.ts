/**
 * Issue #44 item 4: every /adp and /fwd answer keeps to VEREFOO's published OpenAPI document (read at run time from
 * ../shared/spec/verefoo-openapi.json: VEREFOO master 3f31773, Apache-2.0; never copied here). Over a real listener
 * and a workspace populated from the shipped samples, the test calls every operation of the document once (ids that
 * exist, a body built from what is stored) and the error statuses it lists that an unknown id (404), a malformed id
 * or a malformed body (400) reach. Each answer's status must be one the document lists for that operation; a JSON
 * answer must validate, with Ajv, against the schema the document gives for that status and media type; an
 * operation whose 200 lists application/xml is asked again for XML, which xmllint validates against VEREFOO's XSD.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import t from 'tap';
import { ROOT, SHARED, fixture, request, startServer, type HttpAnswer } from '../helpers.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './pdb-cmd.part.js';

const SPEC = path.join(SHARED, 'spec', 'verefoo-openapi.json');
const XSD_DIR = path.join(SHARED, 'spec', 'xsd');
const XSD = path.join(XSD_DIR, 'nfvSchema.xsd');

type Schema = Record<string, any>;
interface Media {
  schema?: Schema;
}
interface DocOperation {
  parameters?: { name: string; in: string; schema?: Schema }[];
  requestBody?: { content?: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
}
interface Doc {
  paths: Record<string, Record<string, DocOperation>>;
  components: { schemas: Record<string, Schema> };
}

/** One call of an operation: the path parameters, the query, and the body (a JSON value, or XML text). */
interface Call {
  params?: Record<string, string | number>;
  query?: string;
  body?: unknown;
}

/** How the walk calls one operation of the document: the call, the status expected, what the answer created. */
interface Recipe {
  /** `METHOD /path` exactly as in the document. */
  op: string;
  expect: number;
  call?: () => Call | Promise<Call>;
  took?: (a: HttpAnswer) => void;
  /** Error calls beyond those the walk derives from the path parameters and the body. */
  errors?: () => { status: number; call: Call; why: string }[];
}

if (!existsSync(SPEC)) t.plan(0, `needs ${SPEC} (the shared folder beside the clone)`);
else await walk(JSON.parse(await readFile(SPEC, 'utf8')) as Doc);

async function walk(doc: Doc): Promise<void> {
  const s = await startServer();
  t.teardown(s.close);

  const open = schemaValidators(doc.components, false);
  const closed = schemaValidators(doc.components, true);
  const validator = open.validator;
  const ajv = open.ajv;
  const schemaName = (schema: Schema): string =>
    typeof schema.$ref === 'string'
      ? schema.$ref.split('/').at(-1)!
      : schema.type === 'array'
        ? `array of ${schemaName(schema.items)}`
        : JSON.stringify(schema);
  const resolved = (schema: Schema): Schema =>
    typeof schema.$ref === 'string' ? doc.components.schemas[schema.$ref.split('/').at(-1)!]! : schema;

  /** The media object of `content` for a media type, or for the range that covers it (`*\/*`). */
  const mediaFor = (content: Record<string, Media> | undefined, type: string) =>
    content?.[type] ?? content?.[`${type.split('/')[0]}/*`] ?? content?.['*/*'];

  const operations = new Map<string, DocOperation>();
  for (const [p, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) operations.set(`${method.toUpperCase()} ${p}`, op);

  // --- what the walk found, for the summary at the end --------------------------------------------------------------
  const rows: string[] = [];
  const notes = new Map<string, Map<string, Set<string>>>();
  const note = (topic: string, op: string, what: string) => {
    const ops = notes.get(topic) ?? notes.set(topic, new Map()).get(topic)!;
    ops.set(op, (ops.get(op) ?? new Set()).add(what));
  };
  const UNDESCRIBED = 'answers the document gives no body for, with a body from nfv';
  const NO_404 = 'operations with an id that list no 404: what nfv answers for an unknown id';
  const NOT_XSD = 'XML inside <content> that the XSD does not declare (not validated)';
  const EXTRA = "JSON members the document's schemas do not name (allowed: none of its schemas closes its members)";

  // --- XML: xmllint and VEREFOO's XSD -------------------------------------------------------------------------------
  const xmllint = (args: string[], input: string) => spawnSync('xmllint', args, { input, encoding: 'utf8' });
  const haveXmllint = spawnSync('xmllint', ['--version']).status === 0 && existsSync(XSD);
  /** Elements the XSD declares globally: those an instance document may have as its root. */
  const declared = new Set<string>();
  if (haveXmllint)
    for (const file of ['nfvSchema.xsd', 'verigraph.xsd', 'errorSchema.xsd', 'hateoasLinks.xsd']) {
      const xpath = "/*[local-name()='schema']/*[local-name()='element']/@name";
      const out = spawnSync('xmllint', ['--xpath', xpath, path.join(XSD_DIR, file)], { encoding: 'utf8' }).stdout;
      for (const m of out.matchAll(/name="([^"]+)"/g)) declared.add(m[1]!);
    }

  // --- the workspace, populated from the shipped samples ------------------------------------------------------------
  const ids: Record<string, string | number> = {};
  const id = (name: string) => {
    const v = ids[name];
    if (v === undefined) throw new Error(`no ${name}: the step that creates it failed`);
    return v;
  };
  const get = async (target: string) => {
    const a = await request(s.url, 'GET', target);
    if (a.status !== 200) throw new Error(`GET ${target} answered ${a.status}: ${a.text.slice(0, 300)}`);
    return a.json;
  };
  const sample = (name: string) => readFile(path.join(ROOT, 'samples', name), 'utf8');
  /** A firewall node as a /fwd body: its name, type and configuration, without the /adp ids and neighbours. */
  const fwdBody = (n: any) => {
    const { id: _c, ...configuration } = n.configuration;
    return { name: n.name, functionalType: 'FIREWALL', configuration };
  };

  await t.test('populate: a simulation of samples/data-centre.xml, its firewalls as /fwd nodes', async (t) => {
    // A stored simulation stores its inputs too: the graph (with firewall 10.0.3.1 and its rules), the constraints,
    // the requirement set with its properties, and a substrate with hosts and connections.
    const sim = await request(s.url, 'POST', '/adp/simulations?fid=FIREWALL', await sample('data-centre.xml'));
    t.equal(sim.status, 200, 'simulated');
    ids.smid = Number(
      sim.json.links
        .find((l: { rel: string }) => l.rel === 'simulation')
        .href.split('/')
        .at(-1),
    );
    const graph = (await get('/adp/graphs')).content[0].graph[0];
    ids.gid = graph.id;
    const fw = graph.node.find((n: any) => n.functionalType === 'FIREWALL' && n.configuration?.firewall);
    ids.fw = fw.id;
    // Two other nodes: the neighbour of the node the walk adds, and the neighbour it then adds to it.
    [ids.other, ids.other2] = graph.node.filter((n: any) => n.id !== fw.id).map((n: any) => n.name);
    const set = (await get('/adp/requirements')).content[0][0];
    ids.rid = set.id;
    ids.pid = set.property[0].id;
    ids.sid = (await get('/adp/substrates')).content[0][0];
    ids.hid = (await get(`/adp/substrates/${ids.sid}/hosts`)).content[0].host[0].name;
    t.equal((await request(s.url, 'GET', `/adp/graphs/${ids.gid}/constraints`)).status, 200, 'constraints stored');
    t.ok((await get(`/adp/substrates/${ids.sid}/connections`)).content[0].connection.length > 0, 'connections');

    // /fwd: the firewall of the graph and those of the simulation's answer, with their rules (POST /fwd/nodes is
    // nfv's; the document lists no way to create a node).
    const result = (await get(`/adp/simulations/${ids.smid}`)).content[0];
    const firewalls = new Map<string, any>();
    for (const n of [...graph.node, ...result.graphs.graph.flatMap((g: any) => g.node)])
      if (n.functionalType === 'FIREWALL' && n.configuration?.firewall?.elements?.length) firewalls.set(n.name, n);
    const created: number[] = [];
    for (const n of firewalls.values()) {
      const a = await request(s.url, 'POST', '/fwd/nodes', JSON.stringify(fwdBody(n)));
      t.equal(a.status, 201, `POST /fwd/nodes ${n.name}`);
      created.push(a.json.id);
    }
    t.ok(created.length >= 2, 'two firewall nodes or more: one to delete alone, one for the list');
    [ids.nid, ids.nid2] = created;
    ids.eid = (await get(`/fwd/nodes/${ids.nid}`)).configuration.firewall.elements[0].id;
  });

  // --- the walk: every operation of the document, in an order where each finds what it needs ------------------------
  /** The resource a GET answers: the body of a PUT back, or of a POST of a copy. */
  const body = async (target: string) => (await get(target)).content[0];
  const graph = () => `/adp/graphs/${id('gid')}`;
  const recipes: Recipe[] = [
    // graphs, nodes, neighbours, configurations, constraints
    { op: 'GET /adp/graphs', expect: 200 },
    {
      op: 'POST /adp/graphs',
      expect: 201,
      // The fixture's node names: a copy of the stored graph would be referred to by the substrate's hosts.
      call: async () => ({ body: await fixture('graphs.xml') }),
      took: (a) => (ids.newGid = a.json.content[0][0]),
    },
    { op: 'GET /adp/graphs/{gid}', expect: 200, call: () => ({ params: { gid: id('gid') } }) },
    {
      op: 'PUT /adp/graphs/{gid}',
      expect: 200,
      call: async () => ({ params: { gid: id('gid') }, body: await body(graph()) }),
    },
    {
      op: 'POST /adp/graphs/{gid}/nodes',
      expect: 201,
      call: () => ({
        params: { gid: id('gid') },
        body: {
          name: '10.99.0.1',
          functionalType: 'FORWARDER',
          neighbour: [{ name: id('other') }],
          configuration: { name: 'relay', forwarder: { name: 'Forwarder' } },
        },
      }),
      took: (a) => (ids.newNid = a.json.content[0]),
    },
    {
      op: 'GET /adp/graphs/{gid}/nodes/{nid}',
      expect: 200,
      call: () => ({ params: { gid: id('gid'), nid: id('fw') } }),
    },
    {
      op: 'PUT /adp/graphs/{gid}/nodes/{nid}',
      expect: 200,
      call: async () => ({
        params: { gid: id('gid'), nid: id('fw') },
        body: await body(`${graph()}/nodes/${id('fw')}`),
      }),
    },
    {
      op: 'POST /adp/graphs/{gid}/nodes/{nid}/neighbours',
      expect: 201,
      call: () => ({ params: { gid: id('gid'), nid: id('newNid') }, body: { name: id('other2') } }),
      took: (a) => (ids.neid = a.json.content[0]),
    },
    {
      op: 'GET /adp/graphs/{gid}/nodes/{nid}/configuration',
      expect: 200,
      call: () => ({ params: { gid: id('gid'), nid: id('fw') } }),
    },
    {
      op: 'PUT /adp/graphs/{gid}/nodes/{nid}/configuration/{cid}',
      expect: 200,
      call: async () => {
        const configuration: any = await body(`${graph()}/nodes/${id('fw')}/configuration`);
        return { params: { gid: id('gid'), nid: id('fw'), cid: configuration.id }, body: configuration };
      },
    },
    { op: 'GET /adp/graphs/{gid}/constraints', expect: 200, call: () => ({ params: { gid: id('gid') } }) },
    {
      op: 'PUT /adp/graphs/{gid}/constraints',
      expect: 200,
      call: async () => ({ params: { gid: id('gid') }, body: await body(`${graph()}/constraints`) }),
    },
    {
      op: 'POST /adp/graphs/{gid}/constraints',
      expect: 201,
      call: async () => ({ params: { gid: id('gid') }, body: await body(`${graph()}/constraints`) }),
    },
    // requirement sets and properties
    { op: 'GET /adp/requirements', expect: 200 },
    {
      op: 'POST /adp/requirements',
      expect: 201,
      call: async () => ({ body: await body(`/adp/requirements/${id('rid')}`) }),
      took: (a) => (ids.newRid = a.json.content[0]),
    },
    { op: 'GET /adp/requirements/{rid}', expect: 200, call: () => ({ params: { rid: id('rid') } }) },
    {
      op: 'PUT /adp/requirements/{rid}',
      expect: 200,
      call: async () => ({ params: { rid: id('rid') }, body: await body(`/adp/requirements/${id('rid')}`) }),
    },
    {
      op: 'POST /adp/requirements/{rid}/properties',
      expect: 201,
      call: async () => ({
        params: { rid: id('newRid') },
        body: await body(`/adp/requirements/${id('rid')}/properties/${id('pid')}`),
      }),
      took: (a) => (ids.newPid = a.json.content[0]),
    },
    {
      op: 'GET /adp/requirements/{rid}/properties/{pid}',
      expect: 200,
      call: () => ({ params: { rid: id('rid'), pid: id('pid') } }),
    },
    {
      op: 'PUT /adp/requirements/{rid}/properties/{pid}',
      expect: 200,
      call: async () => ({
        params: { rid: id('rid'), pid: id('pid') },
        body: await body(`/adp/requirements/${id('rid')}/properties/${id('pid')}`),
      }),
    },
    // simulations
    { op: 'GET /adp/simulations', expect: 200 },
    {
      op: 'POST /adp/simulations',
      expect: 200,
      call: async () => ({ query: 'fid=FIREWALL', body: await sample('office-nat.xml') }),
    },
    {
      op: 'POST /adp/simulations/byParams',
      expect: 200,
      call: () => ({ query: `gid=${id('gid')}&rid=${id('rid')}&sid=${id('sid')}&fid=FIREWALL` }),
      took: (a) => (ids.newSmid = a.json.content[0]),
      errors: () => [
        { status: 400, call: { query: '' }, why: 'no gid' },
        { status: 404, call: { query: 'gid=999999' }, why: 'an unknown graph' },
      ],
    },
    { op: 'GET /adp/simulations/{smid}', expect: 200, call: () => ({ params: { smid: id('smid') } }) },
    // substrates, hosts and connections: what is created goes to a new substrate, which the deletes take apart
    { op: 'GET /adp/substrates', expect: 200 },
    { op: 'POST /adp/substrates', expect: 201, took: (a) => (ids.newSid = a.json.content[0]) },
    { op: 'GET /adp/substrates/{sid}/hosts', expect: 200, call: () => ({ params: { sid: id('sid') } }) },
    {
      op: 'POST /adp/substrates/{sid}/hosts',
      expect: 201,
      call: async () => ({ params: { sid: id('newSid') }, body: await body(`/adp/substrates/${id('sid')}/hosts`) }),
    },
    {
      op: 'GET /adp/substrates/{sid}/hosts/{hid}',
      expect: 200,
      call: () => ({ params: { sid: id('sid'), hid: id('hid') } }),
    },
    {
      op: 'PUT /adp/substrates/{sid}/hosts/{hid}',
      expect: 200,
      call: async () => ({
        params: { sid: id('sid'), hid: id('hid') },
        body: await body(`/adp/substrates/${id('sid')}/hosts/${id('hid')}`),
      }),
    },
    { op: 'GET /adp/substrates/{sid}/connections', expect: 200, call: () => ({ params: { sid: id('sid') } }) },
    {
      op: 'POST /adp/substrates/{sid}/connections',
      expect: 201,
      call: async () => ({
        params: { sid: id('newSid') },
        body: await body(`/adp/substrates/${id('sid')}/connections`),
      }),
    },
    {
      op: 'PUT /adp/substrates/{sid}/connections',
      expect: 200,
      call: async () => ({
        params: { sid: id('newSid') },
        body: await body(`/adp/substrates/${id('sid')}/connections`),
      }),
    },
    // /fwd and generateFiles
    { op: 'GET /fwd/nodes', expect: 200 },
    { op: 'GET /fwd/nodes/{nid}', expect: 200, call: () => ({ params: { nid: id('nid') } }) },
    {
      op: 'PUT /fwd/nodes/{nid}',
      expect: 204,
      call: async () => ({ params: { nid: id('nid') }, body: await get(`/fwd/nodes/${id('nid')}`) }),
    },
    {
      op: 'PUT /fwd/nodes/{nid}/configuration',
      expect: 204,
      call: async () => ({
        params: { nid: id('nid') },
        body: (await get(`/fwd/nodes/${id('nid')}`)).configuration,
      }),
    },
    {
      op: 'GET /fwd/nodes/{nid}/configuration/firewall/{eid}',
      expect: 200,
      call: () => ({ params: { nid: id('nid'), eid: id('eid') } }),
    },
    {
      op: 'PUT /fwd/nodes/{nid}/configuration/firewall/{eid}',
      expect: 204,
      call: async () => ({
        params: { nid: id('nid'), eid: id('eid') },
        body: await get(`/fwd/nodes/${id('nid')}/configuration/firewall/${id('eid')}`),
      }),
    },
    ...['getIptables', 'getOpenVswitch', 'getIpfw', 'getFortinet'].map((segment): Recipe => ({
      op: `GET /fwd/deploy/${segment}/{nid}`,
      expect: 200,
      call: () => ({ params: { nid: id('nid') } }),
    })),
    {
      op: 'POST /adp/venvironment/generateFiles',
      expect: 200,
      call: async () => ({ query: 'firewallType=ALL', body: await sample('data-centre.xml') }),
      errors: () => [{ status: 400, call: { query: 'firewallType=PF', body: '<NFV/>' }, why: 'an unknown type' }],
    },
    // deletes: what the walk created first, then the bulk deletes; DELETE /fwd/nodes last
    {
      op: 'DELETE /adp/graphs/{gid}/nodes/{noid}/neighbours/{neid}',
      expect: 200,
      call: () => ({ params: { gid: id('gid'), noid: id('newNid'), neid: id('neid') } }),
    },
    {
      op: 'DELETE /adp/graphs/{gid}/nodes/{nid}',
      expect: 200,
      call: () => ({ params: { gid: id('gid'), nid: id('newNid') } }),
    },
    { op: 'DELETE /adp/graphs/{gid}/constraints', expect: 200, call: () => ({ params: { gid: id('gid') } }) },
    {
      op: 'DELETE /adp/requirements/{rid}/properties/{pid}',
      expect: 200,
      call: () => ({ params: { rid: id('newRid'), pid: id('newPid') } }),
    },
    { op: 'DELETE /adp/requirements/{rid}', expect: 200, call: () => ({ params: { rid: id('newRid') } }) },
    { op: 'DELETE /adp/substrates/{sid}/connections', expect: 200, call: () => ({ params: { sid: id('newSid') } }) },
    {
      op: 'DELETE /adp/substrates/{sid}/hosts/{hid}',
      expect: 200,
      call: () => ({ params: { sid: id('newSid'), hid: id('hid') } }),
    },
    { op: 'DELETE /adp/substrates/{sid}/hosts', expect: 200, call: () => ({ params: { sid: id('newSid') } }) },
    { op: 'DELETE /adp/substrates/{sid}', expect: 200, call: () => ({ params: { sid: id('newSid') } }) },
    { op: 'DELETE /adp/simulations/{smid}', expect: 200, call: () => ({ params: { smid: id('newSmid') } }) },
    { op: 'DELETE /adp/graphs/{gid}', expect: 200, call: () => ({ params: { gid: id('newGid') } }) },
    {
      op: 'DELETE /fwd/nodes/{nid}/configuration/firewall/{eid}',
      expect: 204,
      call: () => ({ params: { nid: id('nid'), eid: id('eid') } }),
    },
    { op: 'DELETE /fwd/nodes/{nid}', expect: 204, call: () => ({ params: { nid: id('nid2') } }) },
    { op: 'DELETE /adp/simulations', expect: 200 },
    { op: 'DELETE /adp/requirements', expect: 200 },
    { op: 'DELETE /adp/substrates', expect: 200 },
    { op: 'DELETE /adp/graphs', expect: 200 },
    { op: 'DELETE /fwd/nodes', expect: 204 },
  ];

  await t.test('the walk calls every operation of the document, and only those', async (t) => {
    const walked = recipes.map((r) => r.op);
    t.same(
      [...operations.keys()].filter((k) => !walked.includes(k)),
      [],
      'every operation of the document has a recipe',
    );
    t.same(
      walked.filter((k) => !operations.has(k)),
      [],
      'every recipe is an operation of the document',
    );
    t.equal(new Set(walked).size, walked.length, 'each once');
    t.equal(operations.size, 62, 'the document of VEREFOO master 3f31773 has 62 operations');
  });

  /** The concrete target of a call: the path with its parameters, and the query. */
  const targetOf = (docPath: string, call: Call) =>
    docPath.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = call.params?.[name];
      if (v === undefined) throw new Error(`no value for {${name}}`);
      return encodeURIComponent(String(v));
    }) + (call.query ? `?${call.query}` : '');

  /**
   * Calls the operation and checks the answer against the document: the status expected, the status listed, and a
   * JSON answer against the response schema of that status and media type.
   */
  const check = async (
    t: Tap.Test,
    key: string,
    call: Call,
    expect: number,
    why: string,
  ): Promise<HttpAnswer | undefined> => {
    const [method, docPath] = key.split(' ') as [string, string];
    const op = operations.get(key)!;
    const target = targetOf(docPath, call);
    const text = call.body === undefined || typeof call.body === 'string' ? call.body : JSON.stringify(call.body);
    // What a valid call sends must be a valid request of the document, or the walk proves nothing: a JSON body
    // against the document's request schema, an XML one against the XSD.
    if (expect < 400 && typeof call.body === 'string' && haveXmllint) {
      const r = xmllint(['--noout', '--schema', XSD, '-'], call.body);
      const what = `${key}: the XML body sent is valid against the XSD`;
      t.equal(r.status, 0, r.status === 0 ? what : `${what}: ${said(r.stderr)}`);
    } else if (expect < 400 && call.body !== undefined && typeof call.body !== 'string') {
      const media = op.requestBody?.content?.['application/json'];
      if (!media?.schema) t.fail(`${key}: the document takes no JSON body`);
      else {
        const v = validator(media.schema);
        const what = `${key}: the body sent is a valid ${schemaName(media.schema)}`;
        t.ok(v(call.body), v.errors ? `${what}: ${ajv.errorsText(v.errors, { separator: '; ' })}` : what);
      }
    }
    const a = await request(s.url, method, target, text);
    const label = `${method} ${target} → ${a.status} (${why})`;
    t.equal(a.status, expect, `${label}: ${expect} expected`, { said: a.json?.error ?? a.text.slice(0, 500) });
    const listed = Object.keys(op.responses);
    if (!listed.includes(String(a.status))) {
      t.fail(`${label}: the document lists only ${listed.join(', ')} for ${key}`);
      rows.push(`FAIL ${key} ${a.status} (${why}): status not listed (${listed.join(', ')})`);
      return a;
    }
    const content = op.responses[String(a.status)]!.content;
    const mediaType = (a.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const hasBody = a.text.length > 0;
    if (!content || Object.keys(content).length === 0) {
      if (hasBody) note(UNDESCRIBED, key, `${a.status} ${mediaType}`);
      t.pass(`${label}: listed; the document gives no schema`);
      rows.push(`pass ${key} ${a.status} (${why}): no schema in the document`);
      return a;
    }
    const media = mediaFor(content, mediaType);
    if (!hasBody || !media?.schema) {
      const wrong = hasBody ? `answers ${mediaType}, not one of ${Object.keys(content).join(', ')}` : 'answers no body';
      t.fail(`${label}: ${wrong}`);
      rows.push(`FAIL ${key} ${a.status} (${why}): ${wrong}`);
      return a;
    }
    if (a.json === undefined) {
      t.fail(`${label}: the ${mediaType} answer is not JSON`);
      rows.push(`FAIL ${key} ${a.status} (${why}): not JSON`);
      return a;
    }
    const v = validator(media.schema);
    const valid = v(a.json);
    const name = schemaName(media.schema);
    const errors = ajv.errorsText(v.errors, { separator: '; ' });
    t.ok(valid, valid ? `${label}: a valid ${name}` : `${label}: not a valid ${name}: ${errors}`);
    const strict = closed.validator(media.schema);
    if (valid && !strict(a.json))
      for (const e of strict.errors ?? [])
        if (e.keyword === 'additionalProperties')
          note(EXTRA, key, `${a.status} ${e.instancePath.replace(/\/\d+/g, '/*')}/${e.params.additionalProperty}`);
    rows.push(`${valid ? 'pass' : 'FAIL'} ${key} ${a.status} (${why}): ${name}${valid ? '' : `: ${errors}`}`);
    return a;
  };

  /**
   * The XML answer of an operation whose 200 lists application/xml, validated with xmllint --schema against
   * nfvSchema.xsd (which includes verigraph.xsd, errorSchema.xsd and hateoasLinks.xsd). The envelope is the
   * document's `xml.name` of the response schema (`entities`, with `link` and `content`): the XSD declares no such
   * element (its Hyperlinks/Link is another envelope), so each element inside `content` is validated on its own as
   * the root of an instance document: graphs, graph, node, configuration, Constraints, PropertyDefinition, Hosts,
   * Host, Connections and NFV are global elements of the XSD. A Property is declared only inside PropertyDefinition,
   * so it is validated wrapped in one. The ids of an id list (`<id>`) are declared nowhere and are only parsed.
   */
  const checkXml = async (t: Tap.Test, key: string, call: Call) => {
    const [method, docPath] = key.split(' ') as [string, string];
    const schema = operations.get(key)!.responses['200']!.content!['application/xml']!.schema!;
    const root = resolved(schema).xml?.name as string;
    const text = call.body === undefined || typeof call.body === 'string' ? call.body : JSON.stringify(call.body);
    const target = targetOf(docPath, call);
    const a = await request(s.url, method, target, text, { Accept: 'application/xml' });
    const label = `${method} ${target} → ${a.status} as XML`;
    t.equal(a.status, 200, `${label}: 200 expected`);
    t.match(a.headers.get('content-type'), /^application\/xml/, `${label}: application/xml`);
    const parsed = xmllint(['--noout', '-'], a.text);
    t.equal(parsed.status, 0, `${label}: well-formed`, { errors: parsed.stderr });
    // The three counts from one xmllint run (each run forks this process, and the file made about a hundred).
    const counts = `concat(count(/${root}), ' ', count(/${root}/content/*), ' ', count(/${root}/content))`;
    const [envelopes, elements, contents] = xmllint(['--xpath', counts, '-'], a.text).stdout.trim().split(' ');
    t.equal(Number(envelopes), 1, `${label}: the envelope is <${root}>`);
    t.equal(Number(contents), 1, `${label}: the answer has its <content>`);
    if (Number(elements) === 0) {
      const text = xmllint(['--xpath', `string(/${root}/content)`, '-'], a.text).stdout.trim();
      note(NOT_XSD, key, `<content> holds the text ${JSON.stringify(text)}, no element`);
    }
    for (let i = 1; i <= Number(elements); i++) {
      const element = xmllint(['--xpath', `/${root}/content/*[${i}]`, '-'], a.text).stdout;
      const tag = /^<([\w:-]+)/.exec(element)?.[1] ?? '?';
      const instance = declared.has(tag)
        ? element
        : tag === 'Property'
          ? `<PropertyDefinition>${element}</PropertyDefinition>`
          : undefined;
      if (instance === undefined) {
        note(NOT_XSD, key, `<${tag}>`);
        continue;
      }
      const r = xmllint(['--noout', '--schema', XSD, '-'], instance);
      const errors = said(r.stderr);
      t.equal(r.status, 0, r.status === 0 ? `${label}: <${tag}> valid` : `${label}: <${tag}> invalid: ${errors}`);
      rows.push(`${r.status === 0 ? 'pass' : 'FAIL'} ${key} 200 XML <${tag}>${r.status === 0 ? '' : `: ${errors}`}`);
    }
  };

  for (const recipe of recipes) {
    const op = operations.get(recipe.op);
    if (!op) continue; // reported by the coverage test above
    await t.test(recipe.op, async (t) => {
      const call = (await recipe.call?.()) ?? {};
      const listed = (status: number) => String(status) in op.responses;
      // The error statuses the document lists that an unknown or malformed id, or a malformed body, reach. The path
      // parameters in the order of the path: an unknown id is the outermost one (the graph of a node).
      const [method, docPath] = recipe.op.split(' ') as [string, string];
      const pathParams = [...docPath.matchAll(/\{(\w+)\}/g)].map(([, name]) =>
        (op.parameters ?? []).find((p) => p.in === 'path' && p.name === name)!,
      );
      const errors = recipe.errors?.() ?? [];
      if (pathParams.length > 0 && listed(404)) {
        const p = pathParams[0]!;
        const unknown = p.schema?.type === 'integer' ? 999999 : 'no-such-name';
        errors.push({
          status: 404,
          call: { ...call, params: { ...call.params, [p.name]: unknown } },
          why: 'unknown id',
        });
      }
      const numeric = pathParams.find((p) => p.schema?.type === 'integer');
      if (numeric && listed(400))
        errors.push({
          status: 400,
          call: { ...call, params: { ...call.params, [numeric.name]: 'abc' } },
          why: 'bad id',
        });
      if (op.requestBody && listed(400))
        errors.push({ status: 400, call: { ...call, body: '{"a":' }, why: 'bad body' });
      for (const e of errors) await check(t, recipe.op, e.call, e.status, e.why);
      if (pathParams.length > 0 && !listed(404)) {
        const p = pathParams[0]!;
        const unknown = targetOf(docPath, { ...call, params: { ...call.params, [p.name]: 999999 } });
        const text = call.body === undefined || typeof call.body === 'string' ? call.body : JSON.stringify(call.body);
        note(NO_404, recipe.op, String((await request(s.url, method, unknown, text)).status));
      }

      const a = await check(t, recipe.op, call, recipe.expect, 'valid call');
      if (a && a.status === recipe.expect) recipe.took?.(a);
      if (op.responses['200']?.content?.['application/xml'] && recipe.expect === 200) {
        if (!haveXmllint) t.skip('XML against the XSD: needs xmllint (Debian: libxml2-utils) and ../shared/spec/xsd');
        else await checkXml(t, recipe.op, call);
      }
    });
  }

  await t.test('summary', async (t) => {
    t.comment(['answers checked:', ...rows].join('\n'));
    for (const [topic, ops] of notes)
      t.comment([`${topic}:`, ...[...ops].map(([op, what]) => `  ${op}: ${[...what].join(', ')}`)].join('\n'));
    t.pass('summary written');
  });
}

/** What xmllint says, on one line: each message once, with how often it came (`-:3:` line numbers dropped). */
function said(stderr: string): string {
  const counts = new Map<string, number>();
  for (const line of stderr.split('\n')) {
    const message = line.replace(/^-:\d+: /, '').trim();
    if (message && message !== '- fails to validate') counts.set(message, (counts.get(message) ?? 0) + 1);
  }
  return [...counts].map(([m, n]) => (n > 1 ? `${m} (${n} times)` : m)).join('; ');
}

/**
 * Ajv validators of the document's schemas: a schema validator, not code of ours, checks $ref, required, enum, array
 * items and formats as JSON Schema defines them. The document is OpenAPI 3.0.1, whose schema objects are JSON Schema
 * with extra keywords: `xml` and `example` are not JSON Schema (strict: false lets Ajv ignore them), `nullable` (none
 * in this document) is one Ajv knows. With `closed`, every object schema also gets additionalProperties: false, which
 * the document does not say: used only to name, in the summary, the members nfv adds to what the document describes.
 */
function schemaValidators(components: Doc['components'], closed: boolean) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  const BASE = 'https://verefoo.invalid/openapi.json';
  const close = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(close)
      : v && typeof v === 'object'
        ? {
            ...Object.fromEntries(Object.entries(v).map(([k, x]) => [k, close(x)])),
            ...('properties' in v && closed ? { additionalProperties: false } : {}),
          }
        : v;
  // The document's references are local (#/components/schemas/X): point them at the components added below.
  const rebase = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(rebase)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v).map(([k, x]) => [k, k === '$ref' && typeof x === 'string' ? BASE + x : rebase(x)]),
          )
        : v;
  ajv.addSchema({ $id: BASE, components: close(components) });
  const compiled = new Map<string, ValidateFunction>();
  const validator = (schema: Schema) => {
    const key = JSON.stringify(schema);
    if (!compiled.has(key)) compiled.set(key, ajv.compile(rebase(close(schema)) as Schema));
    return compiled.get(key)!;
  };
  return { ajv, validator };
}
