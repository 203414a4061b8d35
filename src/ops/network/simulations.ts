/**
 * `/adp/simulations`: run the engine on an NFV (all-in-one) or on stored resources (byParams), store the results,
 * read and delete them. Reads never solve.
 */
import { approximatedLines, approximatedNodes, withList } from '../../model/approximation.js';
import { boxOf, meet, ruleBoxes } from '../../model/space.js';
import { EmptyCollection, badRequest, clip, interrupted, notFound, quote } from '../../model/errors.js';
import { NfvType, PropertyDefinitionType } from '../../model/resources.js';
import { FUNCTIONAL_TYPES } from '../../model/resources.js';
import type { Elements, Graph, NFV, Node, Property } from '../../model/types.js';
import { runSimulation } from '../../engine/threads/pool.js';
import type {
  FirewallChange,
  FirewallReport,
  Report,
  RequirementReport,
  SimulationResult,
} from '../../engine/simulate.js';
import type { HostingReport } from '../../engine/placement/hosting.js';
import {
  ALGORITHMS,
  MAX_EFFORT,
  MAX_TIMEOUT_SECONDS,
  OBJECTIVES,
  SIMULATION_DEFAULTS,
  type Algorithm,
  type Objective,
} from '../../model/limits.js';
import { parseId } from '../../model/ids.js';
import { plural } from '../../model/words.js';
import { dotOf, dotReply } from './draw.js';
import { done, envelope, json, operation, text, type EnvelopeReply, type Input } from '../operation.js';
import { clearCollection, addGraph, findGraph, findRequirementSet, findSubstrate } from './lookups.js';
import { ADP_AREA, type AdpData, type SimulationRecord, type SimulationRun } from '../../store/network.js';
import { nextId, type IdSource } from '../../store/area.js';

/** The solver thread started ahead of a simulation (the CLI's simulate warms it while reading its input). */
export { warmSolver } from '../../engine/threads/pool.js';

const nfvReply = { envelope: { item: NfvType } } as const;

interface SimulationQuery {
  algorithm: Algorithm;
  timeoutSeconds: number;
  store: boolean;
  /** Configured firewalls are deployed: change them at the fewest rule changes (VEREFOO's REACT=true too). */
  reconfigure: boolean;
  /** What the synthesised firewalls minimise: VEREFOO's fewest rules, or least privilege first. */
  objective: Objective;
  /** How hard to try to prove the answer minimal, 1 to MAX_EFFORT: N times the proof's work (engine/simulate.ts). */
  effort: number;
  /** What the client calls its input (the CLI sends the file name), kept with a stored result. */
  origin?: string;
}

const MAX_ORIGIN = 200;

/**
 * Checks the query of a simulation: fid values are functional types, algorithm AP or MF, timeout in seconds,
 * objective one of OBJECTIVES, effort a whole number from 1 to MAX_EFFORT.
 */
export function simulationQuery(query: URLSearchParams): SimulationQuery {
  for (const fid of query.getAll('fid')) {
    if (!(FUNCTIONAL_TYPES as readonly string[]).includes(fid))
      throw badRequest(`fid: ${quote(fid)} is not a functional type`);
  }
  const algorithm = (query.get('algorithm') ?? query.get('Algorithm') ?? SIMULATION_DEFAULTS.algorithm).toUpperCase();
  if (!ALGORITHMS.includes(algorithm as Algorithm)) throw badRequest(`algorithm: ${quote(algorithm)} is not AP or MF`);
  const effortText = query.get('effort') ?? String(SIMULATION_DEFAULTS.effort);
  const effort = Number(effortText);
  if (!/^\d{1,3}$/.test(effortText) || effort < 1 || effort > MAX_EFFORT)
    throw badRequest(`effort: ${quote(clip(effortText))} is not a whole number from 1 to ${MAX_EFFORT}`);
  // More effort is more work to wait for: the default time limit grows with it, so that the limit set for effort 1
  // does not stop a job the user asked to try harder on.
  const timeoutText =
    query.get('timeout') ?? String(Math.min(SIMULATION_DEFAULTS.timeoutSeconds * effort, MAX_TIMEOUT_SECONDS));
  const timeoutSeconds = Number(timeoutText);
  if (!/^\d{1,6}(\.\d{1,3})?$/.test(timeoutText) || timeoutSeconds <= 0 || timeoutSeconds > MAX_TIMEOUT_SECONDS) {
    throw badRequest(
      `timeout: ${quote(timeoutText)} is not a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}`,
    );
  }
  const flag = (name: string, fallback: 'true' | 'false') => {
    const text = query.get(name) ?? fallback;
    if (text !== 'true' && text !== 'false') throw badRequest(`${name}: ${quote(text)} is not true or false`);
    return text === 'true';
  };
  const store = flag('store', 'true');
  const reconfigure = flag('reconfigure', `${SIMULATION_DEFAULTS.reconfigure}`) || flag('REACT', 'false');
  const objective = query.get('objective') ?? SIMULATION_DEFAULTS.objective;
  if (!(OBJECTIVES as readonly string[]).includes(objective))
    throw badRequest(`objective: ${quote(clip(objective))} is not ${OBJECTIVES.join(' or ')}`);
  if (objective === 'least-privilege' && reconfigure)
    throw badRequest('objective: least-privilege does not apply to a reconfiguration (its kept rules are not chosen)');
  const origin = query.get('origin') ?? undefined;
  if (origin !== undefined && (origin.length === 0 || origin.length > MAX_ORIGIN))
    throw badRequest(`origin: give 1 to ${MAX_ORIGIN} characters`);
  return {
    algorithm: algorithm as Algorithm,
    timeoutSeconds,
    store,
    reconfigure,
    objective: objective as Objective,
    effort,
    origin,
  };
}

/** The answer of a simulation, with its report for the CLI's summary (HTTP has it as X-Nfv-* headers). */
export interface SimulationReply<C> extends EnvelopeReply<C> {
  report: Report;
  /** "3/3 requirements hold; 1 firewall (1 placed); 2 rules" (`reportSummary`), also the X-Nfv-Summary header. */
  summary: string;
}

/** Where the functions run, in a few words: "hosting: 4 active hosts, total latency 119 (optimal)". */
export function hostingSummary(h: HostingReport): string {
  if (h.status === 'infeasible') return `hosting: INFEASIBLE: ${clip(h.conflicts?.[0]?.message ?? 'no placement')}`;
  if (h.status === 'none' || !h.objective) return 'hosting: none (no substrate hosts)';
  const { activeHosts, totalLatency } = h.objective;
  const proof = h.optimal ? 'optimal' : `not proven optimal; at least ${h.lowerBound?.activeHosts ?? '?'} hosts`;
  return `hosting: ${plural(activeHosts, 'active host')}, total latency ${totalLatency} (${proof})`;
}

/** The answer meets everything asked: every requirement holds and, with a substrate, it is placed (exit 0). */
export const answerHolds = (r: Report) => r.verdict === 'SAT' && r.hosting?.status !== 'infeasible';

/** ", at least 21 (gap 30 %)" where a lower bound is below the count, else nothing. */
const atLeast = (count: number, lower: number | undefined) =>
  lower === undefined || lower >= count
    ? ''
    : `, at least ${lower} (gap ${Math.round((100 * (count - lower)) / count)} %)`;

/** A report in one line, the same words on a terminal, on stderr and in the X-Nfv-Summary header. */
export const reportSummary = (r: Report) =>
  `${r.satisfied}/${r.properties} requirements hold; ` +
  (r.unknown ? `${r.unknown} unknown (approximated firewall rules decide them); ` : '') +
  `${plural(r.firewalls, 'firewall')} (${r.allocated} placed)${atLeast(r.firewalls, r.lowerBound?.firewalls)}; ` +
  `${plural(r.rules, 'rule')}${atLeast(r.rules, r.lowerBound?.rules)}` +
  (r.objective === 'least-privilege' ? ' (least privilege)' : '') +
  (r.changes === undefined ? '' : `; ${plural(r.changes, 'rule change')}`) +
  (r.optimal === false ? '; not proven minimal (optimal="false")' : '') +
  (r.hosting && r.hosting.status !== 'none' ? `; ${hostingSummary(r.hosting)}` : '');

function resultReply<C>(r: Report, content: C, stored?: number): SimulationReply<C> {
  const summary = reportSummary(r);
  const hosting = r.hosting ?? { status: 'none' };
  return {
    kind: 'envelope',
    content: [content],
    headers: {
      'X-Nfv-Verdict': r.verdict,
      'X-Nfv-Optimal': String(r.optimal !== false),
      ...(r.lowerBound
        ? { 'X-Nfv-Lower-Bound': `firewalls=${r.lowerBound.firewalls}; rules=${r.lowerBound.rules}` }
        : {}),
      'X-Nfv-Objective': r.objective ?? SIMULATION_DEFAULTS.objective,
      'X-Nfv-Summary': summary,
      'X-Nfv-Hosting': hosting.status,
      ...(hosting.objective ? { 'X-Nfv-Active-Hosts': String(hosting.objective.activeHosts) } : {}),
    },
    links: stored === undefined ? undefined : [{ rel: 'simulation', href: `/adp/simulations/${stored}` }],
    report: r,
    summary,
  };
}

async function storeResult(
  data: AdpData,
  ids: IdSource,
  result: SimulationResult,
  source: SimulationRecord['source'],
  run: SimulationRun,
): Promise<number> {
  const id = await nextId(ids, 'simulation');
  data.simulations.push({ id, result: result.nfv, report: result.report, source, run });
  return id;
}

/**
 * A network with approximated firewalls (imports with lines nfv cannot model: firewall-io.md B.5) is verified
 * twice, once with each firewall's may list and once with its must list; since what a list allows only grows from
 * must to real to may, an isolation holds if it holds with may and fails if it fails with must, a reachability the
 * other way round, and otherwise it is unknown: `isSat` false, with the approximated lines that meet its traffic.
 * Only verification: reconfiguring such a firewall (B.8) or placing new ones beside it is refused.
 */
async function verifyApproximated(
  nfv: NFV,
  approximated: Node[],
  q: SimulationQuery,
  once: (input: NFV) => Promise<SimulationResult>,
): Promise<SimulationResult> {
  const lines = approximatedLines(approximated);
  const named = `${lines.slice(0, 3).join(', ')}${lines.length > 3 ? `, and ${lines.length - 3} more` : ''}`;
  const firewalls = approximated.map((n) => n.name).join(', ');
  if (q.reconfigure)
    throw badRequest(
      `configuration: firewall ${firewalls} has approximated rules (${named}): only exact imports are ` +
        'reconfigured; give --iface/--ipset when importing so that every line is exact',
    );
  const may = await once(withList(nfv, 'may'));
  const must = await once(withList(nfv, 'must'));
  if (may.report.allocated || must.report.allocated)
    throw badRequest(
      `configuration: firewall ${firewalls} has approximated rules (${named}), so nfv only verifies this network; ` +
        'it would place new firewalls: give the allocation places a function, or import every line exactly',
    );
  const properties = may.nfv.propertyDefinition.property;
  const requirements = may.report.requirements.map((r, k): RequirementReport => {
    const withMust = must.report.requirements[k]!;
    const isolation = r.name === 'ISOLATION_PROPERTY';
    const [proof, refutation] = isolation ? [r, withMust] : [withMust, r];
    if (proof.isSat) return { ...proof, isSat: true };
    if (!refutation.isSat) return refutation;
    const traffic = trafficBox(properties[r.index]!);
    const responsible = approximatedLines(approximated, (_n, e) => ruleBoxes(e).some((b) => meet(b, traffic)));
    const list = responsible.length ? responsible : lines;
    return {
      ...r,
      isSat: false,
      unknown: list,
      reason:
        `unknown: it holds with the ${isolation ? 'must' : 'may'} list and fails with the ` +
        `${isolation ? 'may' : 'must'} list; the approximated lines ${list.slice(0, 5).join(', ')}` +
        `${list.length > 5 ? ` and ${list.length - 5} more` : ''} decide it`,
    };
  });
  properties.forEach((p, k) => {
    const r = requirements.find((x) => x.index === k);
    if (r) p.isSat = r.isSat;
  });
  // The answer shows each approximated firewall as it was given: both lists, each rule with its attribute.
  const given = new Map(approximated.map((n) => [n.name, n.configuration]));
  for (const n of (may.nfv.graphs.graph ?? []).flatMap((g) => g.node))
    if (given.has(n.name)) n.configuration = structuredClone(given.get(n.name));
  const satisfied = requirements.filter((r) => r.isSat).length;
  const unknown = requirements.filter((r) => r.unknown).length;
  const timings = { ...may.report.timings, components: [...may.report.timings.components] };
  for (const key of ['expansion', 'paths', 'flows', 'solving', 'placing', 'writing'] as const)
    timings[key] = Math.round((timings[key] + must.report.timings[key]) * 1000) / 1000;
  timings.components.push(...must.report.timings.components);
  return {
    nfv: may.nfv,
    report: {
      ...may.report,
      verdict: satisfied === requirements.length ? 'SAT' : 'UNSAT',
      optimal: may.report.optimal && must.report.optimal,
      satisfied,
      unknown,
      requirements,
      timings,
    },
  };
}

/** The packets a requirement is about. */
const trafficBox = (p: Property) =>
  boxOf({ src: p.src, dst: p.dst, srcPort: p.srcPort, dstPort: p.dstPort, proto: p.lv4Proto });

/** Runs a simulation where this process solves, and says how it ran. */
async function solve(
  i: Input,
  nfv: NFV,
  q: SimulationQuery,
): Promise<{ result: SimulationResult; run: SimulationRun }> {
  const started = performance.now();
  const once = async (input: NFV) => {
    const options = {
      algorithm: q.algorithm,
      timeoutSeconds: q.timeoutSeconds,
      reconfigure: q.reconfigure,
      objective: q.objective,
      effort: q.effort,
    };
    const r = await runSimulation(input, { ...options, onPhase: i.progress }, i.signal);
    if (i.signal?.aborted) throw interrupted();
    return r;
  };
  const approximated = approximatedNodes(nfv);
  const result = approximated.length ? await verifyApproximated(nfv, approximated, q, once) : await once(nfv);
  result.report.timings.parse = i.parseSeconds;
  const seconds = Math.round(performance.now() - started) / 1000;
  return {
    result,
    run: {
      algorithm: q.algorithm,
      seconds,
      created: new Date().toISOString(),
      ...(q.origin ? { origin: q.origin } : {}),
    },
  };
}

/** One line of `simulations summary`: what a person needs to tell stored results apart. */
export interface SimulationLine {
  id: number;
  verdict: string;
  held: number;
  requirements: number;
  firewalls: number;
  placed: number;
  rules: number;
  algorithm: string | null;
  seconds: number | null;
  created: string | null;
  origin: string | null;
}

/** Where a result stored by byParams came from ("gid 1 rid 2"); a posted document has no origin here. */
function originOf(source: SimulationRecord['source']): string | null {
  if (source.rid === undefined && source.sid === undefined) return null;
  const rid = source.rid === undefined ? '' : ` rid ${source.rid}`;
  const sid = source.sid === undefined ? '' : ` sid ${source.sid}`;
  return `gid ${source.gids.join(',')}${rid}${sid}`;
}

function summaryOf(s: SimulationRecord): SimulationLine {
  const r = s.report as Report;
  return {
    id: s.id,
    verdict: r.verdict,
    held: r.satisfied,
    requirements: r.properties,
    firewalls: r.firewalls,
    placed: r.allocated,
    rules: r.rules,
    algorithm: s.run?.algorithm ?? null,
    seconds: s.run?.seconds ?? null,
    created: s.run?.created ?? null,
    origin: s.run?.origin ?? originOf(s.source),
  };
}

interface Traffic {
  protocol: string;
  srcPort: string;
  dstPort: string;
}

/** A stored result's report with each requirement's traffic and each firewall's rules. */
export interface FullReport extends Omit<Report, 'requirements' | 'placements'> {
  simulation: number;
  source: SimulationRecord['source'];
  run?: SimulationRun;
  requirements: (RequirementReport & Traffic)[];
  placements: (FirewallReport & { elements: Elements[] })[];
}

const requirementKey = (q: RequirementReport & Traffic) =>
  `${q.name} ${q.src} -> ${q.dst} ${q.protocol} ${q.srcPort} ${q.dstPort}`;
const ruleKey = (r: Elements) =>
  `${r.action ?? 'DENY'} ${r.source} ${r.destination} ${r.protocol ?? 'ANY'} ${r.srcPort ?? '*'} ${r.dstPort ?? '*'}`;

/**
 * What changed from one stored result to another: requirements whose verdict changed (or that only one has),
 * firewalls added or removed, rules added or removed per firewall (all of them for a firewall added or removed, so
 * that a firewall that moved shows what it carries). Graph ids differ between stored results, so requirements are
 * matched by kind, ends and traffic, firewalls by node name, rules by their fields.
 */
export interface SimulationDiff {
  from: number;
  to: number;
  requirements: { requirement: string; from: boolean | null; to: boolean | null }[];
  firewalls: { added: string[]; removed: string[] };
  rules: { firewall: string; added: string[]; removed: string[] }[];
  /** When the later result is a reconfiguration: each deployed firewall's change, as its report gives it. */
  reconfigured: (FirewallChange & { firewall: string })[];
}

function diffResults(a: SimulationRecord, b: SimulationRecord): SimulationDiff {
  const [ra, rb] = [fullReport(a), fullReport(b)];
  const verdicts = (r: FullReport) => new Map(r.requirements.map((q) => [requirementKey(q), q.isSat]));
  const [va, vb] = [verdicts(ra), verdicts(rb)];
  const requirements = [...new Set([...va.keys(), ...vb.keys()])]
    .filter((k) => va.get(k) !== vb.get(k))
    .map((k) => ({ requirement: k, from: va.get(k) ?? null, to: vb.get(k) ?? null }));
  const firewalls = (r: FullReport) => new Map(r.placements.map((f) => [f.node, f.elements.map(ruleKey)]));
  const [fa, fb] = [firewalls(ra), firewalls(rb)];
  const added = [...fb.keys()].filter((n) => !fa.has(n));
  const removed = [...fa.keys()].filter((n) => !fb.has(n));
  // Firewalls in both first, then those added, then those removed; an absent firewall has no rules.
  const rules = [...[...fa.keys()].filter((n) => fb.has(n)), ...added, ...removed]
    .map((n) => {
      const [before, after] = [fa.get(n) ?? [], fb.get(n) ?? []];
      return {
        firewall: n,
        added: after.filter((k) => !before.includes(k)),
        removed: before.filter((k) => !after.includes(k)),
      };
    })
    .filter((d) => d.added.length || d.removed.length);
  return {
    from: a.id,
    to: b.id,
    requirements,
    firewalls: { added, removed },
    rules,
    reconfigured: rb.placements.flatMap((f) => (f.change ? [{ firewall: f.node, ...f.change }] : [])),
  };
}

function fullReport(s: SimulationRecord): FullReport {
  const r = s.report as Report;
  const nfv = s.result as NFV;
  const properties = nfv.propertyDefinition?.property ?? [];
  const nodes = new Map(
    (nfv.graphs?.graph ?? []).flatMap((g) => g.node.map((n) => [`${g.id ?? 0}/${n.name}`, n] as const)),
  );
  return {
    simulation: s.id,
    source: s.source,
    ...(s.run ? { run: s.run } : {}),
    ...r,
    requirements: r.requirements.map((q) => {
      const p = properties[q.index];
      return { ...q, protocol: p?.lv4Proto ?? 'ANY', srcPort: p?.srcPort ?? '*', dstPort: p?.dstPort ?? '*' };
    }),
    placements: r.placements.map((f) => ({
      ...f,
      elements: nodes.get(`${f.graph}/${f.node}`)?.configuration?.firewall?.elements ?? [],
    })),
  };
}

function findSimulation(data: AdpData, smid: number): SimulationRecord {
  const s = data.simulations.find((x) => x.id === smid);
  if (!s) throw notFound(`simulation ${smid} does not exist`);
  return s;
}

/** Stores what an all-in-one simulation needs: its graphs (new ids), constraints, requirement set and substrate. */
async function storeInputs(data: AdpData, ids: IdSource, nfv: NFV): Promise<SimulationRecord['source']> {
  const idMap = new Map<number | undefined, number>();
  for (const g of nfv.graphs.graph ?? []) {
    const copy: Graph = structuredClone(g);
    idMap.set(g.id, await addGraph(data, ids, copy));
    if (nfv.constraints) data.constraints.push({ graph: copy.id!, constraints: structuredClone(nfv.constraints) });
  }
  const rid = await nextId(ids, 'requirementSet');
  const pids = await ids.take('property', nfv.propertyDefinition.property.length);
  data.requirementSets.push({
    id: rid,
    property: nfv.propertyDefinition.property.map((p, k) => ({
      ...p,
      graph: idMap.get(p.graph) ?? p.graph,
      id: pids[k],
    })),
  });
  let sid: number | undefined;
  if (nfv.hosts?.host?.length || nfv.connections?.connection?.length) {
    sid = await nextId(ids, 'substrate');
    data.substrates.push({ id: sid, hosts: nfv.hosts?.host ?? [], connections: nfv.connections?.connection ?? [] });
  }
  return { gids: [...idMap.values()], rid, sid };
}

export const simulationsList = operation({
  name: 'simulations.list',
  method: 'GET',
  path: '/adp/simulations',
  summary: 'List the stored simulation results',
  reply: { envelope: { item: NfvType, many: true } },
  status: 200,
  errors: 'envelope',
  handler: async ({ ws }) => {
    const data = await ws.read(ADP_AREA);
    if (data.simulations.length === 0) throw new EmptyCollection('simulations');
    return envelope(data.simulations.map((s) => s.result));
  },
});

export const simulationsRun = operation({
  name: 'simulations.run',
  method: 'POST',
  path: '/adp/simulations',
  summary: 'Simulate an NFV: place and configure firewalls, or verify them; stores inputs and result',
  body: NfvType,
  reply: nfvReply,
  status: 200,
  errors: 'document',
  handler: async (i) => {
    const q = simulationQuery(i.query);
    const { result, run } = await solve(i, i.body, q);
    if (!q.store) return resultReply(result.report, result.nfv);
    const id = await i.ws.mutate(ADP_AREA, async (data, ids) =>
      storeResult(data, ids, result, await storeInputs(data, ids, i.body), run),
    );
    return resultReply(result.report, result.nfv, id);
  },
});

export const simulationsDeleteAll = operation({
  name: 'simulations.deleteAll',
  method: 'DELETE',
  path: '/adp/simulations',
  summary: 'Delete all stored simulation results',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async ({ ws }) => clearCollection(ws, 'simulations', 'simulations'),
});

export const simulationsByParams = operation({
  name: 'simulations.byParams',
  method: 'POST',
  path: '/adp/simulations/byParams',
  summary: 'Simulate stored resources: graph gid, requirement set rid, substrate sid; answers the simulation id',
  reply: { envelope: { item: 'id' } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => {
    const q = simulationQuery(i.query);
    const optionalId = (name: string) => {
      const text = i.query.get(name);
      return text === null ? undefined : parseId(name, text);
    };
    const gid = optionalId('gid');
    if (gid === undefined) throw badRequest('gid: the graph to simulate is required');
    const chosen = { gid, rid: optionalId('rid'), sid: optionalId('sid') };
    const data = await i.ws.read(ADP_AREA);
    const graph = findGraph(data, chosen.gid);
    const properties: Property[] =
      chosen.rid !== undefined
        ? findRequirementSet(data, chosen.rid).property.map((p) => ({ ...p, graph: chosen.gid }))
        : data.requirementSets.flatMap((s) => s.property.filter((p) => p.graph === chosen.gid));
    if (properties.length === 0)
      throw badRequest(`rid: no requirement set given, and no property refers to graph ${chosen.gid}`);
    const substrate = chosen.sid !== undefined ? findSubstrate(data, chosen.sid) : undefined;
    const nfv: NFV = {
      graphs: { graph: [structuredClone(graph)] },
      constraints: structuredClone(data.constraints.find((c) => c.graph === chosen.gid)?.constraints),
      propertyDefinition: { property: properties.map(({ id: _id, ...p }) => p) },
      ...(substrate ? { hosts: { host: substrate.hosts }, connections: { connection: substrate.connections } } : {}),
    };
    const { result, run } = await solve(i, nfv, q);
    const id = await i.ws.mutate(ADP_AREA, (d, ids) => {
      findGraph(d, chosen.gid); // it may have been deleted while we solved
      return storeResult(d, ids, result, { gids: [chosen.gid], rid: chosen.rid, sid: chosen.sid }, run);
    });
    return resultReply(result.report, id, id);
  },
});

/**
 * The nodes of a stored result made ready for new requirements: its firewalls stay as deployed (every one may
 * change), and the allocation places it left unused (forwarders now) become places again.
 */
function deployedNetwork(data: AdpData, s: SimulationRecord, properties: Property[]): NFV {
  const result = structuredClone(s.result as NFV);
  const graphs = result.graphs.graph ?? [];
  graphs.forEach((g, k) => {
    const input = data.graphs.find((x) => x.id === s.source.gids[k]);
    const places = new Set((input?.node ?? []).filter((n) => n.functionalType === undefined).map((n) => n.name));
    for (const n of g.node) {
      if (places.has(n.name) && n.functionalType === 'FORWARDER') {
        delete n.functionalType;
        delete n.configuration;
      }
    }
  });
  // Their transparency mark goes too: a place the new answer uses must not read as an optional firewall.
  const reopened = new Set(
    graphs.flatMap((g) => g.node.filter((n) => n.functionalType === undefined)).map((n) => n.name),
  );
  for (const m of result.constraints?.nodeConstraints?.nodeMetrics ?? []) if (reopened.has(m.node)) delete m.optional;
  const graph = graphs[0]?.id ?? 0;
  return {
    ...result,
    initialProperty: { property: result.propertyDefinition.property.map(({ isSat: _isSat, ...p }) => p) },
    propertyDefinition: { property: properties.map(({ id: _id, isSat: _isSat, ...p }) => ({ ...p, graph })) },
  };
}

export const simulationsReconfigure = operation({
  name: 'simulations.reconfigure',
  method: 'POST',
  path: '/adp/simulations/{smid}/reconfigure',
  summary:
    'New requirements against a stored result: its firewalls change at the fewest rule changes, places may get ' +
    'new ones; stored as a new simulation (our addition)',
  body: PropertyDefinitionType,
  reply: nfvReply,
  status: 200,
  errors: 'document',
  handler: async (i) => {
    const q = { ...simulationQuery(i.query), reconfigure: true };
    const smid = i.params.smid as number;
    const data = await i.ws.read(ADP_AREA);
    const s = findSimulation(data, smid);
    const nfv = deployedNetwork(data, s, i.body.property);
    const { result, run } = await solve(i, nfv, q);
    const id = await i.ws.mutate(ADP_AREA, (d, ids) => {
      const from = findSimulation(d, smid); // it may have been deleted while we solved
      return storeResult(d, ids, result, { ...from.source, reconfigured: smid }, run);
    });
    return resultReply(result.report, result.nfv, id);
  },
});

/** A firewall of a stored result by node name; a node that is no firewall there (a forwarder) passes everything. */
function firewallIn(s: SimulationRecord, name: string): Node {
  for (const g of (s.result as NFV).graphs.graph ?? []) {
    const node = g.node.find((n) => n.name === name);
    if (!node) continue;
    if (node.functionalType === 'FIREWALL') return node;
    return { name, functionalType: 'FIREWALL', configuration: { name: 'none', firewall: { defaultAction: 'ALLOW' } } };
  }
  throw notFound(`node: simulation ${s.id} has no node ${quote(name)}`);
}

export const simulationsChange = operation({
  name: 'simulations.change',
  method: 'GET',
  path: '/adp/simulations/{smid}/change/{other}',
  summary:
    'The commands that take one firewall from its rules in stored result smid to those in other: ' +
    '?node=NAME&format=iptables|nftables|ovs|ipfw|vendor (nftables: &sets=true): the rules that differ deleted and ' +
    'inserted in place (our addition)',
  reply: 'text',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    const format = i.query.get('format') ?? 'iptables';
    const scripts = await import('../../deploy/change.js');
    const change = scripts.CHANGE_SCRIPTS.get(format);
    if (!change)
      throw badRequest(
        `format: ${quote(format)}: change scripts exist for ${[...scripts.CHANGE_SCRIPTS.keys()].join(', ')}`,
      );
    const sets = i.query.get('sets') ?? 'false';
    if (sets !== 'true' && sets !== 'false') throw badRequest(`sets: ${quote(sets)} is not true or false`);
    if (sets === 'true' && format !== 'nftables') throw badRequest('sets: only nftables groups rules into sets');
    const name = i.query.get('node');
    if (!name) throw badRequest('node: the firewall node (its name) is required');
    const data = await i.ws.read(ADP_AREA);
    const [from, to] = [findSimulation(data, i.params.smid as number), findSimulation(data, i.params.other as number)];
    const what = `simulation ${from.id} -> ${to.id}`;
    const body = change.render(firewallIn(from, name), firewallIn(to, name), what, { sets: sets === 'true' });
    return text(body, `${format}_${name}_${from.id}-${to.id}.${change.ext}`, 'text/plain; charset=utf-8');
  },
});

export const simulationsLiveChange = operation({
  name: 'simulations.liveChange',
  method: 'POST',
  path: '/adp/simulations/{smid}/change/{other}',
  summary:
    'The change of an imported firewall from stored result smid to other, written against its live iptables-save ' +
    'file (body: the /fwd/import fields format, text, file, node, chain, iface, ipset): iptables-restore --noflush ' +
    'input deleting and inserting live lines (our addition)',
  body: 'json',
  bodyFormats: ['json'],
  reply: 'text',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    // Imported here: the import's module (and the firewalls' operations it adds nodes with) is no simulation's.
    const { parseImportRequest } = await import('../imports.js');
    const r = await parseImportRequest(i.body);
    if (r.format !== 'iptables') throw badRequest('format: changes against live lines are written for iptables only');
    const data = await i.ws.read(ADP_AREA);
    const [from, to] = [findSimulation(data, i.params.smid as number), findSimulation(data, i.params.other as number)];
    const placement = (to.report as Report).placements.find((p) => p.node === r.node && p.change);
    if (!placement?.change)
      throw badRequest(`node: simulation ${to.id} did not reconfigure ${quote(r.node)} (simulate --reconfigure does)`);
    const { iptablesLiveChange } = await import('../../deploy/import/live.js');
    const what = `simulation ${from.id} -> ${to.id}`;
    const body = iptablesLiveChange(
      r.text,
      r.file,
      r.options,
      firewallIn(from, r.node),
      firewallIn(to, r.node),
      placement.change,
      what,
    );
    return text(body, `iptables_${r.node}_${from.id}-${to.id}.rules`, 'text/plain; charset=utf-8');
  },
});

export const simulationsSummary = operation({
  name: 'simulations.summary',
  method: 'GET',
  path: '/adp/simulations/summary',
  summary:
    'One line per stored result: id, verdict, requirements held, firewalls, rules, algorithm, seconds, time, origin',
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async ({ ws }) => json((await ws.read(ADP_AREA)).simulations.map(summaryOf)),
});

export const simulationsGet = operation({
  name: 'simulations.get',
  method: 'GET',
  path: '/adp/simulations/{smid}',
  summary: 'Get a stored simulation result',
  reply: nfvReply,
  status: 200,
  errors: 'document',
  handler: async (i) => envelope(findSimulation(await i.ws.read(ADP_AREA), i.params.smid as number).result),
});

export const simulationsDelete = operation({
  name: 'simulations.delete',
  method: 'DELETE',
  path: '/adp/simulations/{smid}',
  summary: 'Delete a stored simulation result',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSimulation(data, i.params.smid as number);
      data.simulations = data.simulations.filter((x) => x !== s);
      return done();
    }),
});

export const simulationsDiff = operation({
  name: 'simulations.diff',
  method: 'GET',
  path: '/adp/simulations/{smid}/diff/{other}',
  summary: 'What changed from one stored result to another: verdicts, firewalls, rules (our addition)',
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    const data = await i.ws.read(ADP_AREA);
    return json(
      diffResults(findSimulation(data, i.params.smid as number), findSimulation(data, i.params.other as number)),
    );
  },
});

export const simulationsDraw = operation({
  name: 'simulations.draw',
  method: 'GET',
  path: '/adp/simulations/{smid}/draw',
  summary:
    'A picture of a stored result, as Graphviz DOT: placed firewalls, unused places, failed requirements (our ' +
    'addition)',
  reply: 'text',
  status: 200,
  errors: 'document',
  handler: async (i) => {
    const data = await i.ws.read(ADP_AREA);
    const s = findSimulation(data, i.params.smid as number);
    const result = s.result as NFV;
    const graph = result.graphs.graph?.[0];
    if (!graph) throw notFound(`simulation ${s.id} holds no graph`);
    // The stored input graph (its allocation places have no function), unless it was deleted since.
    const input = data.graphs.find((g) => g.id === s.source.gids[0]);
    const body = dotOf({
      title: `simulation ${s.id}: ${(s.report as Report).verdict}`,
      graph,
      input,
      report: s.report as Report,
      hosts: (s.result as NFV).hosts?.host,
    });
    return dotReply(body, `simulation-${s.id}`);
  },
});

export const simulationsReport = operation({
  name: 'simulations.report',
  method: 'GET',
  path: '/adp/simulations/{smid}/report',
  summary: 'The report of a stored simulation: verdict, per-requirement answers and conflicts, placements',
  reply: 'json',
  status: 200,
  errors: 'json',
  handler: async (i) => {
    return json(fullReport(findSimulation(await i.ws.read(ADP_AREA), i.params.smid as number)));
  },
});

export const simulationOperations = [
  simulationsList,
  simulationsRun,
  simulationsReconfigure,
  simulationsDeleteAll,
  simulationsByParams,
  simulationsSummary,
  simulationsGet,
  simulationsDelete,
  simulationsDiff,
  simulationsChange,
  simulationsLiveChange,
  simulationsDraw,
  simulationsReport,
];
