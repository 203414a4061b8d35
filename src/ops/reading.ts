/**
 * How a live rule set is read, the one declaration every operation that reads one shares (`POST /fwd/import`,
 * `POST /fwd/analysis/lint|allows|diff`, `POST /fwd/analysis/explain`): the JSON body fields `chain`, `table`,
 * `ignoreNat`, `natAddress`, `iface`, `host`, `ipset`, `routes`, `neighbours` and `approximation`, each with the
 * command-line flag that gives it, so that the CLI defines the same flags from this list and a refusal that advises a
 * flag names one the command has.
 */
import type { Approximation } from '../model/approximation.js';
import { badRequest, quote } from '../model/errors.js';
import type { ImportOptions } from '../deploy/import/index.js';

export interface ReadingField {
  /** The JSON body field. */
  field: string;
  /** The command-line flag, as commander declares it. */
  flag: string;
  help: string;
  kind: 'string' | 'boolean' | 'list' | 'file' | 'choice';
  choices?: readonly string[];
}

export const READING_FIELDS: readonly ReadingField[] = [
  {
    field: 'chain',
    flag: '--chain <chain>',
    help: 'the chain that decides: FORWARD (nft: forward), or INPUT / OUTPUT for a host firewall',
    kind: 'string',
  },
  {
    field: 'table',
    flag: '--table <table>',
    help: "the deciding chain's table: filter unless given (nft: only the tables of that name)",
    kind: 'string',
  },
  {
    field: 'ignoreNat',
    flag: '--ignore-nat',
    help: 'read it even when nat PREROUTING changes destinations (said in the report)',
    kind: 'boolean',
  },
  {
    field: 'natAddress',
    flag: '--nat-address <address>',
    help:
      "the router's outside address: DNAT and REDIRECT become the forward table, SNAT and MASQUERADE the hidden " +
      'networks, of a NAT node of that name outside the firewall (import --into: a neighbour of the firewall node); ' +
      'IFACE=ADDR,IFACE2=ADDR2: a NAT node per interface, reading the lines with its -i (DNAT) or -o (SNAT)',
    kind: 'string',
  },
  {
    field: 'iface',
    flag: '--iface <name=addresses>',
    help:
      'addresses behind an interface (-i: sources, -o: destinations); repeat; lists that overlap are read by ' +
      'longest prefix, as a router routes them',
    kind: 'list',
  },
  {
    field: 'host',
    flag: '--host <address>',
    help:
      'the end host the rules protect: INPUT decides the packets to it, OUTPUT those from it (import --into: ' +
      'the firewall node goes between the host and its neighbours)',
    kind: 'string',
  },
  { field: 'ipset', flag: '--ipset <file>', help: 'ipset save output, for -m set matches', kind: 'file' },
  {
    field: 'routes',
    flag: '--routes <file>',
    help:
      'ip route (main table) or ip addr output: each interface is the addresses routed out of it (-i: sources, ' +
      '-o: destinations); --iface overrides a name',
    kind: 'file',
  },
  {
    field: 'neighbours',
    flag: '--neighbours <file>',
    help:
      'ip neigh output, with --routes: -m mac --mac-source keeps the sources whose route ends at a neighbour with ' +
      'that MAC (its gateway, or the host itself on the link)',
    kind: 'file',
  },
  {
    field: 'approximation',
    flag: '--approximation <list>',
    help:
      'when lines are approximated: only the may list (allows at least what the firewall does) or the must list ' +
      '(import: both unless given, each rule of one marked; analyses: the may list, each finding or class the ' +
      'must list does not confirm marked, unless given)',
    kind: 'choice',
    choices: ['may', 'must'],
  },
];

export const READING_FIELD_NAMES = READING_FIELDS.map((f) => f.field);

/** The reading options a body gives, each field checked and named. */
export interface Reading {
  options: ImportOptions;
  approximation?: Approximation;
  /** Whether any reading field was given: a source that is no live file refuses them. */
  given: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads the reading fields of a JSON body (other fields are the operation's own). */
export async function parseReading(body: unknown): Promise<Reading> {
  const fields = isRecord(body) ? body : {};
  const given = READING_FIELD_NAMES.filter((f) => fields[f] !== undefined);
  const str = (name: string) => {
    const v = fields[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') throw badRequest(`${name}: a non-empty string is required`);
    return v;
  };
  const approximation = str('approximation');
  if (approximation !== undefined && approximation !== 'may' && approximation !== 'must')
    throw badRequest(`approximation: ${quote(approximation)} is not may or must`);
  const iface = fields.iface ?? [];
  if (!Array.isArray(iface) || !iface.every((x) => typeof x === 'string'))
    throw badRequest('iface: a list of NAME=ADDRESSES strings is required');
  if (fields.ignoreNat !== undefined && typeof fields.ignoreNat !== 'boolean')
    throw badRequest('ignoreNat: true or false');
  const { interfaceMap, macMap, parseIpsets, Refusal } = await import('../deploy/import/index.js');
  const ipsetText = str('ipset');
  let ipsets;
  try {
    ipsets = ipsetText === undefined ? undefined : parseIpsets(ipsetText, 'ipset');
  } catch (e) {
    if (e instanceof Refusal) throw badRequest(e.message);
    throw e;
  }
  const routes = str('routes');
  // The routing table first, then each --iface name over it (the user's word wins), by longest prefix (routes.ts).
  const interfaces = interfaceMap(
    iface as string[],
    routes === undefined ? undefined : { text: routes, file: 'routes' },
  );
  const neighbours = str('neighbours');
  if (neighbours !== undefined && routes === undefined)
    throw badRequest('neighbours: give routes too (--routes FILE): they say which sources each neighbour forwards');
  const macs = neighbours === undefined ? undefined : macMap(routes!, neighbours, 'routes', 'neighbours');
  const chain = str('chain');
  const table = str('table');
  const host = str('host');
  if (host !== undefined) (await import('../deploy/import/index.js')).hostOctets(host);
  const natAddress = str('natAddress');
  // ADDR, or IFACE=ADDR,IFACE2=ADDR2 (a NAT node per interface), each checked and named (nat.ts).
  if (natAddress !== undefined) (await import('../deploy/import/nat.js')).natAddresses(natAddress);
  return {
    options: {
      ...(chain === undefined ? {} : { chain }),
      ...(table === undefined ? {} : { table }),
      ...(host === undefined ? {} : { host }),
      ...(natAddress === undefined ? {} : { natAddress }),
      iface: interfaces,
      ...(ipsets ? { ipsets } : {}),
      ...(macs ? { macs } : {}),
      ignoreNat: fields.ignoreNat === true,
    },
    ...(approximation ? { approximation } : {}),
    given,
  };
}
