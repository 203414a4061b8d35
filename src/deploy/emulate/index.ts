/**
 * `nfv emulate`: an answer built in Linux network namespaces, each requirement probed with real packets, and the
 * kernel's verdict set beside nfv's claim (docs/emulate.md). `plan.ts` says what is built and probed, `run.ts`
 * runs it in a sandbox, this file reads the kernel's answers as one line per requirement.
 */
import type { NFV } from '../../model/types.js';
import type { EmulatedRequirement, EmulationReport, KernelVerdict } from './report.js';
import { PINNED_PATHS, deciding, planEmulation, type Plan, type RequirementPlan } from './plan.js';
import { runPlan, type Arrived, type BlameRequest, type Blamed } from './run.js';

export const NOT_COVERED = [
  'addresses are the nodes’ own (a node named by a pattern, a whole network, has one address of it); ports are ' +
    'sampled (the ends of the requirement’s range and of the rules’ ranges)',
  'ICMP echo stands for every protocol other than TCP and UDP',
  'Linux nftables (nfv deploy nftables, stateful) stands for every firewall',
  `simple paths: the default route and at most ${PINNED_PATHS} more per source and destination (3 with requirements ` +
    'both ways), pinned: each requirement’s witness path (where the model lets it through), then the shortest',
  'a NAT without a forward table translates from outside to its address to the one hidden host a source’s ' +
    'requirements ask for (the model: to each hidden pattern); a second hidden host asked of the same source is ' +
    'probed directly, not through the NAT',
  'a load balancer forwards unchanged, as in the model; no dynamic routing, link failures or timing',
];

/** Said in place of the witness path where there is none to show (plan.ts WitnessSearch). */
const WITNESS_NONE: Record<RequirementPlan['witnessSearch'], string> = {
  found: '-',
  none: 'none: the model lets no packet of it through on any path',
  stopped: 'not known: the search stopped at its bound',
  unpinned: 'not probed: the pair’s slots hold other witnesses',
  'not searched': '-',
};

const IPTABLES_STANDS_FOR = 'Linux iptables (nfv deploy iptables, stateful) stands for every firewall';

/** The kernel's verdict of one requirement, and the path it was seen on (index into its paths). */
function kernelVerdict(r: RequirementPlan, arrived: Arrived): { kernel: KernelVerdict; at: number } {
  const arrivedOn = r.paths.map((p) => p.probes.filter((k) => arrived[k] === true).length);
  const isolation = r.name === 'ISOLATION_PROPERTY';
  const complete = r.name === 'COMPLETE_REACHABILITY_PROPERTY';
  // Reachability: some probe (complete: every probe) of its witness path arrived, the path on which the model lets
  // its traffic through, or without one of any path; isolation: none on any path.
  const passes = (j: number) => arrivedOn[j]! > 0 && (!complete || arrivedOn[j] === r.paths[j]!.probes.length);
  const through =
    r.witness !== undefined ? (passes(r.witness) ? r.witness : -1) : r.paths.findIndex((_, j) => passes(j));
  const leak = arrivedOn.findIndex((n) => n > 0);
  // A control that did not arrive: that path's routing is broken, and no verdict on it would mean anything.
  const broken = r.paths.findIndex((p) => p.controls.some((k) => arrived[k] !== true));
  const kernel: KernelVerdict =
    broken >= 0 ? 'no route' : isolation ? (leak < 0 ? 'holds' : 'fails') : through >= 0 ? 'holds' : 'fails';
  const shown = broken >= 0 ? broken : isolation ? leak : through >= 0 ? through : (r.witness ?? 0);
  return { kernel, at: Math.max(0, shown) };
}

/**
 * What to ask of the counters for a requirement: on the path shown, a probe that arrived (the rules that let it
 * through) or else one that was dropped (the rule that dropped it). Positions count the loaded chain: the control
 * rule first, then the deployed rules, then the policy's counter.
 */
function blameRequest(r: RequirementPlan, at: number, arrived: Arrived, plan: Plan): BlameRequest | undefined {
  const path = r.paths[at];
  if (!path?.firewalls.length) return undefined;
  const passed = path.probes.find((k) => arrived[k] === true);
  const dropped = path.probes.find((k) => arrived[k] === false);
  const probe = passed ?? dropped;
  if (probe === undefined) return undefined;
  const allow = passed !== undefined;
  const watch: Record<string, number[]> = {};
  for (const ns of path.firewalls) {
    const f = plan.firewalls.find((x) => x.ns === ns)!;
    watch[ns] = allow ? deciding(f, true) : f.drops;
  }
  return { probe, arrived: allow, watch };
}

function ruleText(plan: Plan, [ns, position]: [string, number]): string {
  const f = plan.firewalls.find((x) => x.ns === ns)!;
  const k = position - 1;
  return k < f.rules.length ? `${f.node} #${k + 1} ${f.rules[k]}` : `${f.node} policy ${f.policy}`;
}

export function readVerdicts(plan: Plan, arrived: Arrived, blamed: Blamed): EmulationReport {
  let asked = 0;
  const requirements = plan.requirements.map((r): EmulatedRequirement => {
    const { kernel, at } = kernelVerdict(r, arrived);
    const request = blameRequest(r, at, arrived, plan);
    const rose = request ? (blamed[asked++] ?? []) : [];
    const path = r.paths[at];
    const claim = r.claim === undefined ? 'none' : r.claim ? 'holds' : 'fails';
    const probes = r.paths.flatMap((p) => p.probes);
    const onPaths = r.paths.map((p, j) => ({
      role: [...(j === 0 ? ['default route'] : []), ...(j === r.witness ? ['witness'] : [])].join(', ') || 'pinned',
      path: p.nodes.join(' > '),
      probes: p.probes.length,
      arrived: p.probes.filter((k) => arrived[k] === true).length,
      control: p.controls.every((k) => arrived[k] === true),
    }));
    return {
      index: r.index,
      requirement: `${r.name} ${r.src} -> ${r.dst}`,
      traffic: r.traffic,
      kernel,
      claim,
      agree: kernel === claim,
      path: path ? path.nodes.join(' > ') : '-',
      rule: rose.length
        ? (request!.arrived ? rose : rose.slice(0, 1)).map((x) => ruleText(plan, x)).join('; ')
        : path && !path.firewalls.length
          ? 'no firewall on the path'
          : '-',
      probes: probes.length,
      arrived: probes.filter((k) => arrived[k] === true).length,
      paths: r.paths.length,
      unprobedPaths: r.unprobedPaths,
      witness: r.witness !== undefined ? r.paths[r.witness]!.nodes.join(' > ') : WITNESS_NONE[r.witnessSearch],
      onPaths,
    };
  });
  return {
    agree: requirements.every((r) => r.agree),
    requirements,
    namespaces: plan.namespaces.length,
    links: plan.create.split('\n').filter((l) => l.startsWith('link add')).length,
    firewalls: plan.firewalls.length,
    probes: plan.probes.length,
    notCovered:
      plan.firewallFormat === 'iptables'
        ? NOT_COVERED.map((n) => (n.startsWith('Linux nftables') ? IPTABLES_STANDS_FOR : n))
        : NOT_COVERED,
  };
}

/** The counters to read once the verdicts are known: one request per requirement whose path has firewalls. */
export const blameRequests = (plan: Plan, arrived: Arrived): BlameRequest[] =>
  plan.requirements.flatMap((r) => {
    const request = blameRequest(r, kernelVerdict(r, arrived).at, arrived, plan);
    return request ? [request] : [];
  });

export async function emulate(
  nfv: NFV,
  options: { signal?: AbortSignal; progress?: (phase: string) => void; root?: boolean; iptables?: boolean } = {},
): Promise<EmulationReport> {
  const plan = planEmulation(nfv, { iptables: options.iptables });
  const { arrived, blamed } = await runPlan(plan, (a) => blameRequests(plan, a), options);
  return readVerdicts(plan, arrived, blamed);
}

export { planEmulation, runPlan };
export { EmulationReportType, type EmulatedRequirement, type EmulationReport, type KernelVerdict } from './report.js';
