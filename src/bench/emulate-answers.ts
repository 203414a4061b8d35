/**
 * npm run conformance:emulate: 50 answers (issue 45 item 5) simulated and emulated, where the kernel must agree with
 * every claim: 35 of the VEREFOO conformance inputs (`../shared/verefoo-testfile`) of one graph and at most 30 nodes
 * named by addresses, drawn by a seeded shuffle, and 15 of the redundant-network generator (`fabric.ts`: leaf-spine,
 * rings and mesh, with and without NAT, seeds 1-3, at most 30 nodes). Prints one line per answer and a summary, and
 * writes bench-results/emulate-answers.md. `test/deploy/emulate/answers.part.ts` (in `nat.test.ts`'s process) runs
 * every fifth of the same list.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAddress } from '../model/address.js';
import { decodeDocument } from '../model/codec.js';
import { NfvType } from '../model/resources.js';
import type { NFV } from '../model/types.js';
import { generateFabric, shapeName, type FabricShape } from './fabric.js';
import { REPO, TESTFILES, xmlFilesUnder } from './reference.js';
import { random } from './topology.js';

export interface AnswerCase {
  name: string;
  /** The input to simulate; its answer is what is emulated. */
  input: NFV;
}

const MAX_NODES = 30;
const VEREFOO_CASES = 35;
const SHUFFLE_SEED = 45;
const FABRICS: FabricShape[] = [
  { kind: 'leaf-spine', spines: 2, leaves: 3, hostsPerLeaf: 2 },
  { kind: 'rings', rings: 2, ringSize: 4 },
  { kind: 'mesh', routers: 6, degree: 3 },
];

/** Nodes named by one address or pattern each: what emulate builds (it refuses other names). */
const emulable = (nfv: NFV) => {
  const graphs = nfv.graphs.graph ?? [];
  const nodes = graphs[0]?.node ?? [];
  return graphs.length === 1 && nodes.length <= MAX_NODES && nodes.every((n) => parseAddress(n.name) !== undefined);
};

/** The 50 cases, in a fixed order (the same list every run). */
export function emulateAnswerCases(testfiles = TESTFILES): AnswerCase[] {
  const verefoo: AnswerCase[] = [];
  for (const file of xmlFilesUnder(testfiles)) {
    let input: NFV;
    try {
      input = decodeDocument(NfvType, readFileSync(file, 'utf8'));
    } catch {
      continue;
    }
    if (emulable(input)) verefoo.push({ name: path.relative(testfiles, file), input });
  }
  // A seeded Fisher-Yates shuffle: a sample across the folders, not the first ones in ls order.
  const rnd = random(SHUFFLE_SEED);
  for (let i = verefoo.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [verefoo[i], verefoo[j]] = [verefoo[j]!, verefoo[i]!];
  }
  const fabric: AnswerCase[] = [];
  for (const seed of [1, 2, 3])
    for (const shape of FABRICS)
      for (const nat of [false, true]) {
        const input = generateFabric({ shape, nat, seed, requirementsPerHost: 2 });
        if (emulable(input)) fabric.push({ name: `${shapeName(shape)}${nat ? ' nat' : ''} seed ${seed}`, input });
      }
  return [...verefoo.slice(0, VEREFOO_CASES), ...fabric.slice(0, 50 - VEREFOO_CASES)];
}

async function main(): Promise<void> {
  const { simulate } = await import('../engine/simulate.js');
  const { emulate } = await import('../deploy/emulate/index.js');
  const lines: string[] = [];
  const counts = { agree: 0, disagree: 0, noAnswer: 0, refused: 0, requirements: 0, probes: 0 };
  const say = (line: string) => {
    lines.push(line);
    process.stdout.write(`${line}\n`);
  };
  const started = performance.now();
  for (const c of emulateAnswerCases()) {
    let answer: NFV;
    try {
      answer = (await simulate(c.input, { timeoutSeconds: 20 })).nfv;
    } catch (e) {
      counts.noAnswer++;
      say(`${c.name}: no answer (${(e as Error).message})`);
      continue;
    }
    const t = performance.now();
    try {
      const r = await emulate(answer);
      const wrong = r.requirements.filter((q) => !q.agree);
      counts[wrong.length ? 'disagree' : 'agree']++;
      counts.requirements += r.requirements.length;
      counts.probes += r.probes;
      say(
        `${c.name}: ${answer.graphs.graph![0]!.node.length} nodes, ${r.requirements.length} requirements, ` +
          `${r.probes} probes, ${wrong.length ? `DISAGREES on ${wrong.length}` : 'agrees'}, ` +
          `${((performance.now() - t) / 1000).toFixed(1)} s`,
      );
      for (const q of wrong) say(`  ${q.index} ${q.requirement}: kernel ${q.kernel}, nfv ${q.claim}, ${q.path}`);
    } catch (e) {
      counts.refused++;
      say(`${c.name}: refused (${(e as Error).message})`);
    }
  }
  say(
    `${counts.agree} answers agree, ${counts.disagree} disagree, ${counts.refused} refused, ${counts.noAnswer} ` +
      `without an answer; ${counts.requirements} requirements, ${counts.probes} probes; ` +
      `${((performance.now() - started) / 1000).toFixed(0)} s in all`,
  );
  mkdirSync(path.join(REPO, 'bench-results'), { recursive: true });
  writeFileSync(
    path.join(REPO, 'bench-results', 'emulate-answers.md'),
    `# Emulation of 50 answers (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  process.exit(counts.disagree || counts.refused ? 1 : 0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
