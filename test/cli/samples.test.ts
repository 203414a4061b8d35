/**
 * Every file of samples/ is accepted by the command that reads it, on a fresh workspace, in the order a person
 * would load them; a sample shipped without its command here fails the test.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, scratch } from '../helpers.js';
import { nfv } from './in-process.js';

const SAMPLES = path.join(ROOT, 'samples');
const at = (name: string) => path.join(SAMPLES, name);

const ws = await scratch(t);
const imported = path.join(ws, 'office-fw.xml');

/** Each sample with the commands that read it (exit 0 each), then what their answer must say. */
const READERS: { sample: string; commands: string[][]; says?: RegExp }[] = [
  { sample: 'office-nat.xml', commands: [['simulate', at('office-nat.xml')]] },
  { sample: 'web-farm.xml', commands: [['simulate', at('web-farm.xml')]] },
  { sample: 'data-centre.xml', commands: [['simulate', at('data-centre.xml')]] },
  // The data centre as workspace resources: graph 1, requirement set 1 and substrate 1 on a fresh workspace.
  { sample: 'data-centre-graphs.xml', commands: [['graphs', 'create', '-f', at('data-centre-graphs.xml')]] },
  {
    sample: 'data-centre-constraints.xml',
    commands: [['constraints', 'set', '1', '-f', at('data-centre-constraints.xml')]],
  },
  {
    sample: 'data-centre-requirements.xml',
    commands: [['requirements', 'create', '-f', at('data-centre-requirements.xml')]],
  },
  {
    sample: 'data-centre-hosts.xml',
    commands: [
      ['substrates', 'create'],
      ['substrates', 'hosts', 'add', '1', '-f', at('data-centre-hosts.xml')],
    ],
  },
  {
    sample: 'data-centre-connections.xml',
    commands: [
      ['substrates', 'connections', 'add', '1', '-f', at('data-centre-connections.xml')],
      ['simulate', '--gid', '1', '--rid', '1', '--sid', '1'],
    ],
    says: /^SAT: 7\/7 requirements hold; .*; hosting: 6 active hosts, total latency 28 \(optimal\)/m,
  },
  {
    sample: 'router.rules',
    commands: [
      ['import', 'iptables', at('router.rules'), '--node', '10.255.0.1'],
      [
        'import',
        'iptables',
        at('router.rules'),
        '--node',
        '10.255.0.1',
        '--into',
        at('office-nat.xml'),
        '-o',
        imported,
      ],
      ['simulate', imported],
    ],
    says: /^SAT: 3\/3 requirements hold/m,
  },
  { sample: 'puppet-catalog.json', commands: [['inventory', 'ingest', 'catalog', at('puppet-catalog.json')]] },
  { sample: 'puppet-facts.json', commands: [['inventory', 'ingest', 'facts', at('puppet-facts.json')]] },
  {
    sample: 'puppet-report.json',
    commands: [
      ['inventory', 'ingest', 'report', at('puppet-report.json')],
      ['inventory', 'query', 'nodes[certname, latest_report_status, facts_timestamp] {}'],
    ],
    says: /"certname": ?"web1\.example\.com", ?"latest_report_status": ?"changed", ?"facts_timestamp": ?"2026-/,
  },
];

t.test('every sample has the command that reads it here', async (t) => {
  t.same(READERS.map((r) => r.sample).sort(), (await readdir(SAMPLES)).sort());
});

for (const { sample, commands, says } of READERS) {
  t.test(sample, async (t) => {
    let last = '';
    for (const args of commands) {
      const r = await nfv(args, { workspace: ws });
      t.equal(r.code, 0, `nfv ${args.join(' ')}: ${r.stderr}`);
      last = `${r.stdout}${r.stderr}`;
    }
    if (says) t.match(last, says);
  });
}
