/**
 * The report of an emulation as data (`index.ts` reads it from the kernel's answers), and its resource type for
 * XML: a module of its own so that the operations load it without the plan and the prober.
 */
import type { FieldSpec, ObjectType } from '../../model/schema.js';

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
  /**
   * The path on which the model lets some packet of the requirement through (a reachability's, an isolation's the
   * model says is broken), or why there is none; a reachability holds in the kernel when it arrives there.
   */
  witness: string;
  /** Per probed path: its role, the probes that arrived on it, and whether its positive control did. */
  onPaths: PathResult[];
}

export interface PathResult {
  /** `default route`, `witness` (both, comma-separated, when one path is both) or `pinned`. */
  role: string;
  path: string;
  probes: number;
  arrived: number;
  control: boolean;
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

const scalars = (kind: 'int' | 'boolean' | 'string', keys: string[], attr: boolean): FieldSpec[] =>
  keys.map((key) => ({ key, type: kind, attr }));

/**
 * The report as XML (`--format xml`, Accept: application/xml): `<emulation>` with the counts as attributes, one
 * `<requirement>` per requirement (verdicts and counts as attributes, the texts as elements) and one `<notCovered>`
 * per thing it does not cover. JSON is the report as it is.
 */
export const EmulationReportType: ObjectType<EmulationReport> = {
  kind: 'object',
  name: 'emulation',
  xml: 'emulation',
  fields: [
    ...scalars('boolean', ['agree'], true),
    ...scalars('int', ['namespaces', 'links', 'firewalls', 'probes'], true),
    {
      key: 'requirements',
      xml: 'requirement',
      list: true,
      type: {
        kind: 'object',
        name: 'requirement',
        xml: 'requirement',
        fields: [
          ...scalars('int', ['index'], true),
          ...scalars('string', ['kernel', 'claim'], true),
          ...scalars('boolean', ['agree'], true),
          ...scalars('int', ['probes', 'arrived', 'paths'], true),
          // A count, or `more` when the path search stopped first.
          ...scalars('string', ['unprobedPaths'], true),
          ...scalars('string', ['requirement', 'traffic', 'path', 'rule', 'witness'], false),
          {
            key: 'onPaths',
            xml: 'onPath',
            list: true,
            type: {
              kind: 'object',
              name: 'onPath',
              xml: 'onPath',
              fields: [
                ...scalars('string', ['role'], true),
                ...scalars('int', ['probes', 'arrived'], true),
                ...scalars('boolean', ['control'], true),
                ...scalars('string', ['path'], false),
              ],
            },
          },
        ],
      },
    },
    { key: 'notCovered', list: true, type: 'string' },
  ],
};
