/**
 * The root endpoint's queries: PQL or JSON by the first character, the `from` form checked in PuppetDB's words, and
 * the active-node restriction added where PuppetDB's add-criteria adds it, unless the query says which nodes.
 */
import t from 'tap';
import { fromParts, parseQueryText, withActiveNodes } from '../../../src/inventory/query/from.js';
import { fails } from './refused.js';

t.test('PQL unless the text starts with [ after whitespace', async (t) => {
  t.same(parseQueryText('resources { }'), ['from', 'resources']);
  t.same(parseQueryText(' \n["from", "resources"]'), ['from', 'resources']);
  fails(t, () => parseQueryText('["from", '), /^Json parse error at line 1, column \d+/);
  fails(t, () => parseQueryText('{"from": 1}'), /^PQL parse error at line 1, column 1: /);
  fails(t, () => parseQueryText(''), /^PQL parse error at line 1, column 1: found the end of the query/);
});

t.test("the from form, its paging clauses and the entity's spelling", async (t) => {
  const paging = (ast: unknown) => Object.fromEntries(fromParts(ast).paging);
  t.match(fromParts(['from', 'resources']), { entity: 'resources', query: undefined });
  t.match(fromParts(['from', 'fact-contents', []]), { entity: 'fact_contents', query: undefined });
  t.match(fromParts(['from', 'reports', ['=', 'a', 1], ['limit', 2]]), { entity: 'reports', query: ['=', 'a', 1] });
  t.same(paging(['from', 'reports', ['=', 'a', 1], ['limit', 2]]), { limit: '2' });
  t.same(paging(['from', 'reports', ['offset', 3], ['order_by', ['a', ['b', 'desc']]]]), {
    offset: '3',
    order_by: '[{"field":"a"},{"field":"b","order":"desc"}]',
  });
  const initial = /^Your initial query must be of the form: \["from",<entity>,\(<optional-query>\)\]\. Check your/;
  fails(t, () => fromParts(['=', 'type', 'File']), initial);
  fails(t, () => fromParts(['from', 5]), initial);
  fails(t, () => fromParts('resources'), initial);
  fails(t, () => fromParts(['from', 'resources', 'type']), /^Your `from` query accepts an optional query only/);
  fails(t, () => fromParts(['from', 'resources', ['limit', 1], ['=', 'a', 1]]), /accepts an optional query only/);
  fails(t, () => fromParts(['from', 'resources', ['limit', 1], ['limit', 1]]), /^Multiple 'limit' clauses/);
  fails(t, () => fromParts(['from', 'resources', ['order_by', null]]), /^Received 'order_by' clause without/);
});

t.test("active nodes: PuppetDB's add-criteria, unless the query names node_state", async (t) => {
  const active = ['=', 'node_state', 'active'];
  const cases: [unknown, unknown][] = [
    [
      ['from', 'resources'],
      ['from', 'resources', active],
    ],
    [
      ['from', 'resources', ['limit', 1]],
      ['from', 'resources', active, ['limit', 1]],
    ],
    [
      ['from', 'resources', ['=', 'a', 1], ['limit', 1]],
      ['from', 'resources', ['and', ['=', 'a', 1], active], ['limit', 1]],
    ],
    [
      ['from', 'resources', ['extract', ['title']]],
      ['from', 'resources', ['extract', ['title'], active]],
    ],
    [
      ['from', 'resources', ['extract', ['title'], null]],
      ['from', 'resources', ['extract', ['title'], active]],
    ],
    [
      ['from', 'resources', ['extract', ['title'], ['=', 'a', 1]]],
      ['from', 'resources', ['extract', ['title'], ['and', ['=', 'a', 1], active]]],
    ],
    [
      ['from', 'resources', ['extract', ['type', ['function', 'count']], ['group_by', 'type']]],
      ['from', 'resources', ['extract', ['type', ['function', 'count']], active, ['group_by', 'type']]],
    ],
    [
      ['from', 'resources', ['extract', ['type'], ['=', 'a', 1], ['group_by', 'type']], ['offset', 1]],
      ['from', 'resources', ['extract', ['type'], ['and', ['=', 'a', 1], active], ['group_by', 'type']], ['offset', 1]],
    ],
    [
      ['from', 'resources', ['=', 'a', 1], ['bogus']],
      ['and', ['from', 'resources', ['=', 'a', 1], ['bogus']], active],
    ],
    [
      ['=', 'a', 1],
      ['and', ['=', 'a', 1], active],
    ],
  ];
  for (const [ast, restricted] of cases) t.same(withActiveNodes(ast), restricted, JSON.stringify(ast));
  for (const ast of [
    ['from', 'resources', ['=', 'node_state', 'any']],
    ['from', 'resources', ['in', 'certname', ['from', 'reports', ['extract', 'certname', ['=', 'node_state', 'x']]]]],
    ['from', 'resources', ['not', ['=', ['node', 'active'], false]]],
    ['from', 'fact_paths'],
    ['from', 'environments', ['=', 'name', 'production']],
    ['from', 'packages'],
  ])
    t.same(withActiveNodes(ast), ast, `left as it is: ${JSON.stringify(ast)}`);
});
