/**
 * PQL parse and compile time per query (issue 24 asks for under 1 ms): the 31 example queries of puppet.md (d)
 * parsed, and those of them on nfv's entities (resources, reports, events) taken the root endpoint's whole way
 * before any row is read: parsed, restricted to active nodes, checked and compiled to a predicate over rows, and
 * compiled to SQL. `npm run build && node dist/bench/pql.js` (a few seconds; nothing is written).
 */
import { events, reports, resources, type Entity } from '../inventory/entities.js';
import { parsePql } from '../inventory/query/pql.js';
import { compilePql, meanMicroseconds as mean } from './pql-compile.js';

/** The examples of puppet.md (d), a fragment completed into a query where the table gives one. */
export const SPEC_EXAMPLES = [
  'nodes { }',
  'nodes[] { }',
  'nodes[certname] { }',
  "nodes { a = 'x' }",
  'nodes { a != 1 }',
  'nodes { a !~ "re" }',
  'nodes { a < 1 }',
  'nodes { a ~ "^web" }',
  'fact_contents { path ~> ["os","rel.*"] }',
  'resources { line is null }',
  'resources { line is not null }',
  'nodes { a = 1 or b = 2 and c = 3 }',
  'nodes { !a = 1 }',
  'nodes { !(a = 1 or b = 2) }',
  'facts { name in ["a","b"] }',
  'facts { certname in nodes[certname] { deactivated is null } }',
  'facts { [certname,name] in fact_contents[certname,name] { value > 1.5e2 } }',
  'nodes { resources { type = "Class" and title = "Web" } }',
  'facts[name, count()] { group by name }',
  'facts[name, avg(value)] { name = "processorcount" group by name }',
  'reports[to_string(producer_timestamp, "FMDAY"), count()] { group by to_string(producer_timestamp, "FMDAY") }',
  'reports { certname = "x" limit 1 }',
  'resources[certname, title] { type = "File" and !(title ~ "hello") order by certname desc, title limit 5 offset 1 }',
  'events { certname in reports[certname] { status = "failed" limit 3 order by producer_timestamp desc } }',
  'inventory[certname, facts.os.family] { facts.os.release.major >= 12 }',
  'inventory { facts."a.b".c = "x" }',
  'inventory { facts.processors.models[0] ~ "Intel" }',
  "facts { value = true or value = -3 or name = 'it\\'s' }",
  'nodes { a <= 1 }',
  'nodes { a > 1 }',
  'nodes { a >= 1 }',
];

const ENTITIES = new Map<string, Entity>([
  ['resources', resources],
  ['reports', reports],
  ['events', events],
]);

const runnable = SPEC_EXAMPLES.filter((q) => ENTITIES.has(/^[a-z_]+/.exec(q)![0]) && !q.includes('to_string'));
const parse = mean(SPEC_EXAMPLES, (q) => parsePql(q));
const whole = mean(runnable, compilePql);
const longest = Math.max(...SPEC_EXAMPLES.map((q) => q.length));
process.stdout.write(
  `PQL parse: ${parse.toFixed(1)} µs per query, mean over the ${SPEC_EXAMPLES.length} examples of puppet.md (d) ` +
    `(up to ${longest} characters)\n` +
    `parse + check + compile to rows and to SQL: ${whole.toFixed(1)} µs per query, mean over the ` +
    `${runnable.length} of them on nfv's entities\n`,
);
