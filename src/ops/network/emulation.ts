/**
 * Emulation (our addition): a result NFV, or a stored simulation's result, built in Linux network namespaces and
 * every requirement probed with real packets (src/deploy/emulate, docs/emulate.md). One handler for both: the CLI's
 * `nfv emulate` and `POST /adp/emulation`, `POST /adp/simulations/{smid}/emulation`.
 */
import { NfvType } from '../../model/resources.js';
import { badRequest, notFound, quote } from '../../model/errors.js';
import type { NFV } from '../../model/types.js';
import { ADP_AREA } from '../../store/network.js';
import { EmulationReportType } from '../../deploy/emulate/report.js';
import { json, operation, type Input } from '../operation.js';

async function emulated(i: Input, nfv: NFV) {
  // ?iptables=true: every firewall loaded with `nfv deploy iptables` (iptables-restore) instead of nftables.
  const flag = i.query.get('iptables') ?? 'false';
  if (flag !== 'true' && flag !== 'false') throw badRequest(`iptables: ${quote(flag)} is not true or false`);
  // Loaded when asked for: the prober and plan are of no use to any other operation.
  const { emulate } = await import('../../deploy/emulate/index.js');
  const report = await emulate(nfv, { signal: i.signal, progress: i.progress, iptables: flag === 'true' });
  return json(report, { schema: EmulationReportType, headers: { 'X-Nfv-Agree': String(report.agree) } });
}

export const emulationRun = operation({
  name: 'emulation.run',
  method: 'POST',
  path: '/adp/emulation',
  summary:
    'Emulate a result NFV in Linux network namespaces: every requirement probed with real packets, the kernel’s ' +
    'verdict beside nfv’s claim (our addition)',
  body: NfvType,
  reply: 'json',
  replySchema: EmulationReportType,
  status: 200,
  errors: 'json',
  handler: async (i) => emulated(i, i.body),
});

export const simulationsEmulate = operation({
  name: 'simulations.emulate',
  method: 'POST',
  path: '/adp/simulations/{smid}/emulation',
  summary: 'Emulate a stored simulation’s result in Linux network namespaces (our addition)',
  reply: 'json',
  replySchema: EmulationReportType,
  status: 200,
  errors: 'json',
  handler: async (i) => {
    const smid = i.params.smid as number;
    const s = (await i.ws.read(ADP_AREA)).simulations.find((x) => x.id === smid);
    if (!s) throw notFound(`simulation ${smid} does not exist`);
    return emulated(i, s.result as NFV);
  },
});

export const emulationOperations = [emulationRun, simulationsEmulate];
