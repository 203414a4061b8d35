/**
 * `nfv emulate`: an answer built in Linux network namespaces, each requirement probed with real packets, and the
 * kernel's verdict set beside nfv's claim (docs/emulate.md). `plan.ts` says what is built and probed, `run.ts`
 * runs it in a sandbox, this file reads the kernel's answers as one line per requirement.
 */
import type { NFV } from '../../model/types.js';
import { PINNED_PATHS, planEmulation, type Plan, type RequirementPlan } from './plan.js';
import { runPlan, type Measured } from './run.js';

export type KernelVerdict = 'holds' | 'fails' | 'no route';

export interface EmulatedRequirement {
  index: number;
  requirement: string;
  traffic: string;
  kernel: KernelVerdict;
  claim: 'holds' | 'fails' | 'none';
  agree: boolean;
  /** The path the verdict was seen on: where a probe arrived, or where the deciding rule dropped it. */
  path: string;
  /** The firewall and nft rule whose drop counter rose, as `nfv deploy nftables` lists the rule. */
  rule: string;
  probes: number;
  arrived: number;
  paths: number;
  /** Simple paths not probed (beyond the bound of pinned paths); `more` when the search stopped before the end. */
  unprobedPaths: number | 'more';
}

export interface EmulationReport {
  agree: boolean;
  requirements: EmulatedRequirement[];
  namespaces: number;
  links: number;
  firewalls: number;
  probes: number;
  /** What the verdicts do not cover: said with every answer. */
  notCovered: string[];
}

export const NOT_COVERED = [
  'addresses are the nodes’ own; ports are sampled (the ends of the requirement’s range and of the rules’ ranges)',
  'ICMP echo stands for every protocol other than TCP and UDP',
  'Linux nftables (nfv deploy nftables, stateful) stands for every firewall',
  `simple paths: the default route and at most ${PINNED_PATHS} more per pair, pinned (shortest first)`,
  'no NAT or load balancer (refused), no dynamic routing, link failures or timing',
];

function verdictOf(r: RequirementPlan, m: Measured, plan: Plan): EmulatedRequirement {
  const arrivedOn = r.paths.map((p) => p.probes.filter((k) => m.arrived[k] === true).length);
  const probes = r.paths.reduce((n, p) => n + p.probes.length, 0);
  const arrived = arrivedOn.reduce((a, b) => a + b, 0);
  const isolation = r.name === 'ISOLATION_PROPERTY';
  const complete = r.name === 'COMPLETE_REACHABILITY_PROPERTY';
  // Reachability: some probe (complete: every probe) of one path arrived; isolation: none on any path.
  const through = r.paths.findIndex((p, j) => arrivedOn[j]! > 0 && (!complete || arrivedOn[j] === p.probes.length));
  const leak = arrivedOn.findIndex((n) => n > 0);
  const broken = r.paths.findIndex((p) => m.arrived[p.control] !== true);
  const kernel: KernelVerdict =
    broken >= 0 ? 'no route' : isolation ? (leak < 0 ? 'holds' : 'fails') : through >= 0 ? 'holds' : 'fails';
  const at = Math.max(0, broken >= 0 ? broken : isolation ? leak : through);
  // The deciding rule: on the path shown, the drop rule whose counter rose for the first dropped probe.
  let rule = '-';
  const path = r.paths[at];
  const blamed = path?.blame === undefined ? undefined : m.blamed[path.blame];
  if (blamed?.ns !== undefined && blamed.rule !== undefined && !(kernel === 'holds' && !isolation)) {
    const f = plan.firewalls.find((x) => x.ns === blamed.ns)!;
    const k = blamed.rule - 1; // the loaded chain starts with the control rule
    rule = k < f.rules.length ? `${f.node} #${k + 1} ${f.rules[k]}` : `${f.node} policy drop`;
  }
  const claim = r.claim === undefined ? 'none' : r.claim ? 'holds' : 'fails';
  return {
    index: r.index,
    requirement: `${r.name} ${r.src} -> ${r.dst}`,
    traffic: r.traffic,
    kernel,
    claim,
    agree: kernel === claim,
    path: path ? path.nodes.join(' > ') : '-',
    rule,
    probes,
    arrived,
    paths: r.paths.length,
    unprobedPaths: r.unprobedPaths,
  };
}

export function readVerdicts(plan: Plan, measured: Measured): EmulationReport {
  const requirements = plan.requirements.map((r) => verdictOf(r, measured, plan));
  return {
    agree: requirements.every((r) => r.agree),
    requirements,
    namespaces: plan.namespaces.length,
    links: plan.create.split('\n').filter((l) => l.startsWith('link add')).length,
    firewalls: plan.firewalls.length,
    probes: plan.probes.length,
    notCovered: NOT_COVERED,
  };
}

export async function emulate(
  nfv: NFV,
  options: { signal?: AbortSignal; progress?: (phase: string) => void; root?: boolean } = {},
): Promise<EmulationReport> {
  const plan = planEmulation(nfv);
  return readVerdicts(plan, await runPlan(plan, options));
}

export { planEmulation, runPlan };
