/**
 * PQL: every form of the grammar gives the AST PuppetDB's transform gives (the examples of puppet.md (d), most
 * checked against PuppetDB 7.12.1's ast_only), parse errors say where and what was expected, the bounds hold, and a
 * PQL query answers as its AST does.
 */
import t from 'tap';
import { reports, resources, events } from '../../../src/inventory/entities.js';
import { parsePql } from '../../../src/inventory/query/pql.js';
import { queryEntity, rootQuery } from '../../../src/inventory/service.js';
import { NfvError } from '../../../src/model/errors.js';
import { MAX_PQL_LENGTH } from '../../../src/model/limits.js';
import { sample } from '../data.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './ast.part.js';
import './from.part.js';

const fails = (t: Tap.Test, text: string, message: RegExp) => {
  try {
    t.fail(`parsed as ${JSON.stringify(parsePql(text))}, expected ${message}`);
  } catch (e) {
    t.ok(e instanceof NfvError && e.status === 400, `${JSON.stringify(text).slice(0, 60)}: a 400`);
    t.match((e as Error).message, message);
  }
};

t.test("the spec's examples: PuppetDB's transform, clause for clause", async (t) => {
  const examples: [string, unknown][] = [
    ['nodes { }', ['from', 'nodes']],
    ['nodes[] { }', ['from', 'nodes', ['extract', []]]],
    ['nodes[certname] { }', ['from', 'nodes', ['extract', ['certname']]]],
    ["nodes { a = 'x' }", ['from', 'nodes', ['=', 'a', 'x']]],
    ['nodes { a != 1 }', ['from', 'nodes', ['not', ['=', 'a', 1]]]],
    ['nodes { a !~ "re" }', ['from', 'nodes', ['not', ['~', 'a', 're']]]],
    ['nodes { a < 1 }', ['from', 'nodes', ['<', 'a', 1]]],
    ['nodes { a <= 1 }', ['from', 'nodes', ['<=', 'a', 1]]],
    ['nodes { a > 1 }', ['from', 'nodes', ['>', 'a', 1]]],
    ['nodes { a >= "2024-01-01" }', ['from', 'nodes', ['>=', 'a', '2024-01-01']]],
    ['nodes { a ~ "^web" }', ['from', 'nodes', ['~', 'a', '^web']]],
    ['fact_contents { path ~> ["os","rel.*"] }', ['from', 'fact_contents', ['~>', 'path', ['os', 'rel.*']]]],
    ['resources { line is null }', ['from', 'resources', ['null?', 'line', true]]],
    ['resources { line is not null }', ['from', 'resources', ['null?', 'line', false]]],
    [
      'nodes { a = 1 or b = 2 and c = 3 }',
      ['from', 'nodes', ['or', ['=', 'a', 1], ['and', ['=', 'b', 2], ['=', 'c', 3]]]],
    ],
    ['nodes { !a = 1 }', ['from', 'nodes', ['not', ['=', 'a', 1]]]],
    ['nodes { !(a = 1 or b = 2) }', ['from', 'nodes', ['not', ['or', ['=', 'a', 1], ['=', 'b', 2]]]]],
    ['facts { name in ["a","b"] }', ['from', 'facts', ['in', 'name', ['array', ['a', 'b']]]]],
    [
      'facts { certname in nodes[certname] { deactivated is null } }',
      [
        'from',
        'facts',
        ['in', 'certname', ['from', 'nodes', ['extract', ['certname'], ['null?', 'deactivated', true]]]],
      ],
    ],
    [
      'facts { [certname,name] in fact_contents[certname,name] { value > 1.5e2 } }',
      [
        'from',
        'facts',
        ['in', ['certname', 'name'], ['from', 'fact_contents', ['extract', ['certname', 'name'], ['>', 'value', 150]]]],
      ],
    ],
    [
      'nodes { resources { type = "Class" and title = "Web" } }',
      ['from', 'nodes', ['subquery', 'resources', ['and', ['=', 'type', 'Class'], ['=', 'title', 'Web']]]],
    ],
    [
      'facts[name, count()] { group by name }',
      ['from', 'facts', ['extract', ['name', ['function', 'count']], ['group_by', 'name']]],
    ],
    [
      'facts[name, avg(value)] { name = "processorcount" group by name }',
      [
        'from',
        'facts',
        ['extract', ['name', ['function', 'avg', 'value']], ['=', 'name', 'processorcount'], ['group_by', 'name']],
      ],
    ],
    [
      'reports[to_string(producer_timestamp, "FMDAY"), count()] { group by to_string(producer_timestamp, "FMDAY") }',
      [
        'from',
        'reports',
        [
          'extract',
          [
            ['function', 'to_string', 'producer_timestamp', 'FMDAY'],
            ['function', 'count'],
          ],
          ['group_by', ['function', 'to_string', 'producer_timestamp', 'FMDAY']],
        ],
      ],
    ],
    ['reports { certname = "x" limit 1 }', ['from', 'reports', ['=', 'certname', 'x'], ['limit', 1]]],
    [
      'resources[certname, title] { type = "File" and !(title ~ "hello") ' +
        'order by certname desc, title limit 5 offset 1 }',
      [
        'from',
        'resources',
        ['extract', ['certname', 'title'], ['and', ['=', 'type', 'File'], ['not', ['~', 'title', 'hello']]]],
        ['order_by', [['certname', 'desc'], 'title']],
        ['limit', 5],
        ['offset', 1],
      ],
    ],
    [
      'events { certname in reports[certname] { status = "failed" limit 3 order by producer_timestamp desc } }',
      [
        'from',
        'events',
        [
          'in',
          'certname',
          [
            'from',
            'reports',
            ['extract', ['certname'], ['=', 'status', 'failed']],
            ['limit', 3],
            ['order_by', [['producer_timestamp', 'desc']]],
          ],
        ],
      ],
    ],
    [
      'inventory[certname, facts.os.family] { facts.os.release.major >= 12 }',
      ['from', 'inventory', ['extract', ['certname', 'facts.os.family'], ['>=', 'facts.os.release.major', 12]]],
    ],
    ['inventory { facts."a.b".c = "x" }', ['from', 'inventory', ['=', 'facts."a.b".c', 'x']]],
    [
      'inventory { facts.processors.models[0] ~ "Intel" }',
      ['from', 'inventory', ['~', 'facts.processors.models[0]', 'Intel']],
    ],
    [
      "facts { value = true or value = -3 or name = 'it\\'s' }",
      ['from', 'facts', ['or', ['=', 'value', true], ['=', 'value', -3], ['=', 'name', "it's"]]],
    ],
  ];
  for (const [pql, ast] of examples) t.same(parsePql(pql), ast, pql);
});

t.test('more of the grammar', async (t) => {
  const forms: [string, unknown][] = [
    // whitespace: none where the grammar allows none, any \s where it allows some, around the whole query
    ['resources{type="File"}', ['from', 'resources', ['=', 'type', 'File']]],
    [
      ' \n\tresources\n[\ttitle ]\n{\r\n type\t=\t"File"\n}\n',
      ['from', 'resources', ['extract', ['title'], ['=', 'type', 'File']]],
    ],
    // literals: JSON escapes in double quotes, only \' in single quotes, reals, negative integers, booleans, arrays
    ['nodes { a = "x\\"y\\n\\u00e9" }', ['from', 'nodes', ['=', 'a', 'x"y\né']]],
    ["nodes { a = 'x\\ny\\'z' }", ['from', 'nodes', ['=', 'a', "x\\ny'z"]]],
    ['nodes { a = \'\' and b = "" }', ['from', 'nodes', ['and', ['=', 'a', ''], ['=', 'b', '']]]],
    [
      'nodes { a = -2.5E-1 or a = 1.0 or a = -0 }',
      ['from', 'nodes', ['or', ['=', 'a', -0.25], ['=', 'a', 1], ['=', 'a', 0]]],
    ],
    ['nodes { a = false }', ['from', 'nodes', ['=', 'a', false]]],
    ['nodes { a = [1, ["x", true], 2.5] }', ['from', 'nodes', ['=', 'a', [1, ['x', true], 2.5]]]],
    ['nodes { a in [ 1 ,2 ] }', ['from', 'nodes', ['in', 'a', ['array', [1, 2]]]]],
    ['nodes { a in["x"] }', ['from', 'nodes', ['in', 'a', ['array', ['x']]]]],
    ['nodes { latest_report? = true }', ['from', 'nodes', ['=', 'latest_report?', true]]],
    // precedence: and binds tighter, parentheses keep their own level, n-ary at one level
    [
      'nodes { a = 1 and b = 2 or c = 3 and d = 4 or e = 5 }',
      [
        'from',
        'nodes',
        ['or', ['and', ['=', 'a', 1], ['=', 'b', 2]], ['and', ['=', 'c', 3], ['=', 'd', 4]], ['=', 'e', 5]],
      ],
    ],
    [
      'nodes { (a = 1 or b = 2) or c = 3 }',
      ['from', 'nodes', ['or', ['or', ['=', 'a', 1], ['=', 'b', 2]], ['=', 'c', 3]]],
    ],
    ['nodes { ( a = 1 ) }', ['from', 'nodes', ['=', 'a', 1]]],
    ['nodes { ! ! a = 1 }', ['from', 'nodes', ['not', ['not', ['=', 'a', 1]]]]],
    ['nodes { !resources { type = "X" } }', ['from', 'nodes', ['not', ['subquery', 'resources', ['=', 'type', 'X']]]]],
    // implicit subqueries: with or without criteria, next to conditions
    ['nodes { reports { } }', ['from', 'nodes', ['subquery', 'reports']]],
    [
      'reports { events { status = "failure" } and certname ~ "web" }',
      ['from', 'reports', ['and', ['subquery', 'events', ['=', 'status', 'failure']], ['~', 'certname', 'web']]],
    ],
    // in with a query, followed by more criteria
    [
      'resources { certname in reports[certname]{latest_report? = true} and type = "File" }',
      [
        'from',
        'resources',
        [
          'and',
          ['in', 'certname', ['from', 'reports', ['extract', ['certname'], ['=', 'latest_report?', true]]]],
          ['=', 'type', 'File'],
        ],
      ],
    ],
    [
      'nodes { certname in reports[certname] { } }',
      ['from', 'nodes', ['in', 'certname', ['from', 'reports', ['extract', ['certname']]]]],
    ],
    // projections: functions with fields or strings, names that are also words of the grammar
    [
      'resources[count(), count(title), max(line), to_string(line, "999")] { }',
      [
        'from',
        'resources',
        [
          'extract',
          [
            ['function', 'count'],
            ['function', 'count', 'title'],
            ['function', 'max', 'line'],
            ['function', 'to_string', 'line', '999'],
          ],
        ],
      ],
    ],
    ['resources[count ( ) ] { }', ['from', 'resources', ['extract', [['function', 'count']]]]],
    ['resources[count, limit, nodes] { }', ['from', 'resources', ['extract', ['count', 'limit', 'nodes']]]],
    ['resources[parameters.ensure] { }', ['from', 'resources', ['extract', ['parameters.ensure']]]],
    ['factsets { facts = 1 }', ['from', 'factsets', ['=', 'facts', 1]]],
    ['nodes { facts.match("a.*").b = 1 }', ['from', 'nodes', ['=', 'facts.match("a.*").b', 1]]],
    [
      'inventory { trusted.extensions.pp_role = "web" }',
      ['from', 'inventory', ['=', 'trusted.extensions.pp_role', 'web']],
    ],
    // group by and paging: several fields, clauses in any order and kept in it, paging without criteria
    [
      'resources[type, count()] { exported = true group by type, certname }',
      [
        'from',
        'resources',
        ['extract', ['type', ['function', 'count']], ['=', 'exported', true], ['group_by', 'type', 'certname']],
      ],
    ],
    ['resources { offset 2 limit 1 }', ['from', 'resources', ['offset', 2], ['limit', 1]]],
    ['resources[title] { limit 1 }', ['from', 'resources', ['extract', ['title']], ['limit', 1]]],
    [
      'resources { order by certname asc , title desc,line }',
      ['from', 'resources', ['order_by', [['certname', 'asc'], ['title', 'desc'], 'line']]],
    ],
    ['resources { type = "A"limit 1 }', ['from', 'resources', ['=', 'type', 'A'], ['limit', 1]]],
  ];
  for (const [pql, ast] of forms) t.same(parsePql(pql), ast, pql);
});

t.test("parse errors: PuppetDB's first line, where, what was found and what was expected", async (t) => {
  fails(
    t,
    'nodes { certname = }',
    /^PQL parse error at line 1, column 20: found '}'\. Expected one of: .*#"\[0-9\]\+".*\[/,
  );
  fails(t, 'nodes {\n  certname = "a" and\n  }', /^PQL parse error at line 3, column 3: found '}'\. Expected one of: /);
  fails(t, 'nodes {} x', /^PQL parse error at line 1, column 10: found 'x'\. Expected: end of query$/);
  fails(t, 'nodez {}', /^PQL parse error at line 1, column 1: found 'nodez \{\}'\. Expected one of: .*\bnodes\b/);
  fails(t, '', /^PQL parse error at line 1, column 1: found the end of the query\. Expected one of: /);
  fails(t, 'nodes { a = 1 b = 2 }', /^PQL parse error at line 1, column 15: .*Expected one of: and, or, group by/);
  fails(t, 'nodes { a = 1and b = 2 }', /^PQL parse error at line 1, column 14: /);
  fails(t, 'nodes { a = 1 and(b = 2) }', /^PQL parse error at line 1, column 18: found '\(b = 2\) \}'/);
  fails(t, 'nodes { a = "x }', /^PQL parse error at line 1, column 17: found the end of the query\. Expected: "$/);
  fails(t, 'nodes { a = "\\q" }', /^PQL parse error at line 1, column 13: not a valid double-quoted string/);
  fails(t, 'nodes { a = 9223372036854775808 }', /^PQL parse error at line 1, column 13: \d+ is not a 64-bit integer/);
  t.same(parsePql('nodes { a = -9223372036854775808 }'), ['from', 'nodes', ['=', 'a', -9223372036854775808]]);
  fails(t, 'nodes { a = 1 group by a limit 1 }', /^PQL parse error at line 1, column 26: found 'limit 1 \}'/);
  fails(t, 'nodes { order by ascii }', /^PQL parse error at line 1, column 18: found 'ascii \}'\. Expected: NOT asc$/);
  fails(
    t,
    'nodes { a = 1 limit }',
    /^PQL parse error at line 1, column 21: found '}'\. Expected one of: -, #"\[0-9\]\+"$/,
  );
  fails(t, 'nodes { line is  null }', /^PQL parse error at line 1, column 14: /);
  fails(t, 'nodes { a ~ 1 }', /^PQL parse error at line 1, column 13: found '1 \}'\. Expected one of: ", '$/);
  fails(t, 'nodes { a = [] }', /^PQL parse error at line 1, column 14: found '\] \}'/);
  fails(
    t,
    'nodes { reports { a = 1 limit 1 } }',
    /^PQL parse error at line 1, column 9: an implicit subquery takes a filter only/,
  );
  t.same(
    parsePql('nodes { reports { limit 1 } }'),
    ['from', 'nodes', ['subquery', 'reports', ['limit', 1]]],
    'one clause, whatever it is, is the filter (the engine refuses it)',
  );
});

t.test(`bounds: ${MAX_PQL_LENGTH} characters, 64 levels of nesting`, async (t) => {
  const names = Array.from({ length: 20_000 }, (_, k) => `"node-${k}.example"`).join(', ');
  const long = `resources { certname in [${names}] }`;
  t.ok(long.length > 400_000 && long.length < MAX_PQL_LENGTH);
  t.equal((parsePql(long) as any)[2][2][1].length, 20_000, 'a long list parses');
  fails(t, `resources { title = "${'x'.repeat(MAX_PQL_LENGTH)}" }`, /^PQL query longer than 1048576 characters$/);
  const deep = (n: number) => `nodes { ${'!'.repeat(n)}a = 1 }`;
  t.ok(parsePql(deep(62)), '62 levels of ! (the AST is 64 deep)');
  fails(t, deep(63), /^query: nested deeper than 64 levels$/);
  fails(t, deep(65), /^PQL parse error at line 1, column \d+: nested deeper than 64 levels$/);
  fails(t, `nodes { ${'('.repeat(100_000)}a = 1${')'.repeat(100_000)} }`, /nested deeper than 64 levels/);
  fails(t, `nodes { a = ${'['.repeat(100_000)}1${']'.repeat(100_000)} }`, /nested deeper than 64 levels/);
  const subqueries = (n: number): string =>
    n === 0 ? 'a = 1' : `certname in nodes[certname] { ${subqueries(n - 1)} }`;
  fails(t, `nodes { ${subqueries(30)} }`, /^query: nested deeper than 64 levels$/);
});

t.test('a PQL query answers as its AST does (folder backend)', async (t) => {
  const data = sample();
  const viaRoot = (text: string, params: Record<string, string> = {}) => {
    const root = rootQuery(new URLSearchParams({ query: text, ...params }));
    if ('ast' in root) throw new Error('ast_only');
    return queryEntity(root.entity, data, root.params).rows;
  };
  const pairs: [string, unknown][] = [
    ['resources { type = "Service" }', ['from', 'resources', ['=', 'type', 'Service']]],
    [
      'resources[certname, title] { tag = "web" and !(line > 15) order by certname desc }',
      [
        'from',
        'resources',
        ['extract', ['certname', 'title'], ['and', ['=', 'tag', 'web'], ['not', ['>', 'line', 15]]]],
        ['order_by', [['certname', 'desc']]],
      ],
    ],
    [
      'resources[type, count()] { group by type }',
      ['from', 'resources', ['extract', ['type', ['function', 'count']], ['group_by', 'type']]],
    ],
    [
      'resources { parameters.opts.tls = true limit 1 offset 1 }',
      ['from', 'resources', ['=', 'parameters.opts.tls', true], ['limit', 1], ['offset', 1]],
    ],
    ['resources { file is null }', ['from', 'resources', ['null?', 'file', true]]],
    [
      'reports { events { status = "failure" } }',
      ['from', 'reports', ['subquery', 'events', ['=', 'status', 'failure']]],
    ],
    [
      'events { certname in reports[certname] { status = "changed" order by producer_timestamp desc limit 1 } }',
      [
        'from',
        'events',
        [
          'in',
          'certname',
          [
            'from',
            'reports',
            ['extract', ['certname'], ['=', 'status', 'changed']],
            ['order_by', [['producer_timestamp', 'desc']]],
            ['limit', 1],
          ],
        ],
      ],
    ],
    [
      'events[status, count()] { group by status }',
      ['from', 'events', ['extract', ['status', ['function', 'count']], ['group_by', 'status']]],
    ],
  ];
  for (const [pql, ast] of pairs) {
    t.same(parsePql(pql), ast, `${pql}: its AST`);
    const answer = viaRoot(pql);
    t.ok(answer.length > 0, `${pql}: answers rows`);
    t.same(answer, viaRoot(JSON.stringify(ast)), `${pql}: the same rows as its AST`);
  }
  t.same(
    viaRoot(
      'events { certname in reports[certname] { status = "changed" order by producer_timestamp desc limit 1 } }',
    ).map((e: any) => e.certname),
    ['b.example'],
    'the subquery keeps only its page: the newest report',
  );
  t.same(
    viaRoot('events { certname in reports[certname] { status = "changed" order by producer_timestamp limit 1 } }').map(
      (e: any) => e.resource_title,
    ),
    ['nginx', 'cron'],
    'and the oldest, ordered the other way',
  );
  const all = (entity: typeof resources) => queryEntity(entity, data, new URLSearchParams()).rows;
  t.same(viaRoot('reports { }'), all(reports), 'every node active: the restriction changes nothing');
  t.same(viaRoot('events { }'), all(events));
  t.same(viaRoot('resources { }'), all(resources));
});

t.test('mutated queries: an AST or a 400, never another error', async (t) => {
  const seeds = [
    'resources[certname, title] { type = "File" and !(title ~ "hello") order by certname desc, title limit 5 }',
    'events { certname in reports[certname] { status = "failed" limit 3 order by producer_timestamp desc } }',
    "reports[status, count()] { noop = false or certname = 'it\\'s' group by status }",
    'resources { parameters.a."b.c"[0] = [1, 2.5e3, -4] and line is not null and tags in ["a"] }',
    'reports { events { status = "failure" } }',
  ];
  const alphabet = ' \n{}[]()!=<>~,."\'\\-0123456789abcdefgilnorstuy_?';
  let state = 24;
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % n;
  };
  const data = sample();
  const outcomes = { parsed: 0, answered: 0, refused: 0 };
  for (let k = 0; k < 5000; k++) {
    const chars = [...seeds[random(seeds.length)]!];
    for (let m = 1 + random(3); m > 0; m--) {
      const at = random(chars.length + 1);
      const op = random(3);
      if (op === 0) chars.splice(at, 1);
      else if (op === 1) chars.splice(at, 0, alphabet[random(alphabet.length)]!);
      else chars[at] = alphabet[random(alphabet.length)]!;
    }
    const text = chars.join('');
    try {
      const ast = parsePql(text);
      if (!(Array.isArray(ast) && ast[0] === 'from')) t.fail(`${text}: ${JSON.stringify(ast)}`);
      outcomes.parsed++;
      const root = rootQuery(new URLSearchParams({ query: text }));
      if (!('ast' in root)) queryEntity(root.entity, data, root.params);
      outcomes.answered++;
    } catch (e) {
      if (!(e instanceof NfvError && e.status === 400)) t.fail(`${text}: ${(e as Error).stack}`);
      else outcomes.refused++;
    }
  }
  t.ok(outcomes.parsed > 500 && outcomes.answered > 100 && outcomes.refused > 500, JSON.stringify(outcomes));
});
