/** Ids, request targets, quoting, depth and UTF-8: the one place each is parsed. */
import t from 'tap';
import { checkDepth, decodeUtf8, parseJson, parseXml } from '../../src/model/codec.js';
import { NfvError, clip, exitCodeFor, listWithin, quote } from '../../src/model/errors.js';
import { parseCount, parseId, parseName, parseParam } from '../../src/model/ids.js';
import { MAX_DEPTH } from '../../src/model/limits.js';
import { parseTarget, parseTargetWithRest } from '../../src/model/target.js';

const status = (fn: () => unknown) => {
  try {
    fn();
    return 0;
  } catch (e) {
    return e instanceof NfvError ? e.status : -1;
  }
};

t.test('numeric ids: non-empty decimal int64 that nfv can hand out', async (t) => {
  t.equal(parseId('gid', '42'), 42);
  for (const bad of ['', ' 1', '1 ', '-1', '+1', '0x10', '1e3', '1.0', '١'])
    t.equal(
      status(() => parseId('gid', bad)),
      400,
      JSON.stringify(bad),
    );
  t.match(String(t.throws(() => parseId('gid', '9223372036854775808'))), /out of the int64 range/);
  t.match(String(t.throws(() => parseId('gid', '9223372036854775807'))), /largest id nfv hands out/);
  t.equal(parseCount('limit', '10'), 10);
  t.equal(
    status(() => parseCount('limit', '9223372036854775808')),
    400,
  );
});

t.test('string ids: never empty, ., .. or containing /', async (t) => {
  t.equal(parseName('hid', 'web-1'), 'web-1');
  for (const bad of ['', '.', '..', 'a/b', 'a\u0000b'])
    t.equal(
      status(() => parseName('hid', bad)),
      400,
      JSON.stringify(bad),
    );
  t.equal(parseParam('hid', '1'), '1', 'host names stay strings');
  t.equal(parseParam('gid', '1'), 1);
});

t.test('request targets are parsed before any normalisation', async (t) => {
  t.same(parseTarget('/adp/graphs/3?x=1&y=a+b').segments, ['adp', 'graphs', '3']);
  t.equal(parseTarget('/adp/graphs/3?x=1&y=a+b').query.get('y'), 'a b');
  t.same(
    parseTarget('/v4/resources/File/%2Fetc%2Fhosts').segments,
    ['v4', 'resources', 'File', '/etc/hosts'],
    '%2F decodes inside a segment',
  );
  const refused = [
    '/adp/simulations/1/%2e%2e',
    '/adp/simulations/1/..',
    '/adp/substrates/1/hosts/%2E',
    '/adp/simulations/',
    '/adp//graphs',
    '//a:b/adp/graphs',
    'adp/graphs',
    '/adp/graphs/%ff',
    '/adp/graphs/%',
    '/adp/graphs?q=%C3%28',
    '/adp/graphs#x',
    '/adp/gr aphs',
  ];
  for (const target of refused)
    t.equal(
      status(() => parseTarget(target)),
      400,
      target,
    );
});

t.test(
  'a title may take the rest of the path, slashes and empty segments included, as PuppetDB routes it',
  async (t) => {
    const withRest = parseTargetWithRest('/v4/resources/File//etc/ssh/sshd_config?limit=1', 3);
    t.same(withRest?.segments, ['v4', 'resources', 'File', '/etc/ssh/sshd_config'], 'the rest is one value');
    t.equal(withRest?.query.get('limit'), '1');
    t.same(parseTargetWithRest('/v4/resources/File/a%20b/c%2Fd', 3)?.segments, ['v4', 'resources', 'File', 'a b/c/d']);
    t.equal(parseTargetWithRest('/v4/resources/File/passwd', 3), undefined, "one segment is parseTarget's case");
    t.equal(parseTargetWithRest('/v4/resources/File//', 3), undefined, 'an empty rest is no title');
    for (const target of [
      '/v4/resources/File//etc/../x',
      '/v4/resources/File/a/%2e',
      '/v4//File/a/b',
      '/v4/r/File/%ff/a',
    ])
      t.equal(
        status(() => parseTargetWithRest(target, 3)),
        400,
        `${target}: the router's segments and the rest's dot segments stay refused`,
      );
  },
);

t.test('quoted values are cut to 120 characters; messages stay one short line', async (t) => {
  t.equal(quote('abc'), '"abc"');
  t.equal(quote('x'.repeat(1_000_000)), `"${'x'.repeat(118)}…`);
  t.equal(clip('x'.repeat(120)), 'x'.repeat(120), 'a value of 120 characters is whole');
  t.equal(clip('x'.repeat(121)), `${'x'.repeat(119)}…`);
  t.equal(clip(`${'x'.repeat(118)}😀😀`), `${'x'.repeat(118)}…`, 'never half of a surrogate pair');
  t.equal(new NfvError(400, `a: ${'y'.repeat(100_000)}\nsecond line`).message.length, 300);
  t.equal(listWithin(['a', 'b', 'c'], 100), "'a', 'b', and 'c'");
  t.equal(listWithin(['a', 'b'], 100), "'a' and 'b'");
  t.equal(listWithin(['a', 'b', 'c'], 100, false), "'a', 'b', 'c'");
  const greek = ['alpha', 'beta', 'gamma', 'delta'];
  t.equal(listWithin(greek, 27), "'alpha', 'beta', and 2 more", 'as many as fit, and how many more');
  t.equal(listWithin(greek, 26), "'alpha', and 3 more");
  t.equal(listWithin(greek, 5), '4 names');
  t.equal(listWithin(['x'.repeat(100_000)], 200), `'${'x'.repeat(119)}…'`, 'each name cut');
  t.notMatch(new NfvError(400, 'one\ntwo').message, /two/);
});

t.test('exit codes follow the status', async (t) => {
  t.same([200, 400, 404, 409, 499, 503, 504, 507, 500].map(exitCodeFor), [0, 2, 3, 4, 130, 4, 5, 4, 70]);
});

t.test('nesting depth is bounded in JSON, XML and query ASTs', async (t) => {
  const deepJson = (n: number) => '['.repeat(n) + ']'.repeat(n);
  t.doesNotThrow(() => parseJson(deepJson(MAX_DEPTH)));
  t.equal(
    status(() => parseJson(deepJson(MAX_DEPTH + 1))),
    400,
  );
  t.equal(
    status(() => parseJson(deepJson(100_000))),
    400,
    'far past the stack',
  );
  t.equal(
    status(() => checkDepth(JSON.parse(deepJson(3000)), 'query')),
    400,
  );
  const deepXml = (n: number) => '<a>'.repeat(n) + '</a>'.repeat(n);
  t.doesNotThrow(() => parseXml(deepXml(MAX_DEPTH - 1)));
  t.equal(
    status(() => parseXml(deepXml(150))),
    400,
  );
  t.equal(
    status(() => parseXml(deepXml(100_000))),
    400,
  );
});

t.test('invalid UTF-8 is refused, a BOM is dropped', async (t) => {
  t.equal(decodeUtf8(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), 'x'), '{}');
  t.equal(
    status(() => decodeUtf8(Buffer.from([0x7b, 0xff, 0x7d]), 'x')),
    400,
  );
  t.equal(
    status(() => decodeUtf8(Buffer.from([0xed, 0xa0, 0x80]), 'x')),
    400,
    'an encoded surrogate',
  );
});
