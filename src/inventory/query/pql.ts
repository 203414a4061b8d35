/**
 * PQL, the Puppet Query Language, parsed by hand (recursive descent) into the v4 AST that both backends run. The
 * grammar is PuppetDB 7.12.1's (`pql/pql-grammar.ebnf`) and the AST its transform's (`pql/transform.clj`), rule for
 * rule: `nodes[certname] { a = 1 and !(b ~ "x") order by certname desc limit 5 }` gives `["from", "nodes",
 * ["extract", ["certname"], ["and", ["=", "a", 1], ["not", ["~", "b", "x"]]]], ["order_by", [["certname", "desc"]]],
 * ["limit", 5]]`. Whitespace is what PuppetDB's `\s` is, keywords are lower case and need the whitespace the grammar
 * asks for (around `and`/`or`, after `group by`, `order by`, `limit`, `offset`).
 *
 * A query that does not parse is a 400 in PuppetDB's words: `PQL parse error at line L, column C:`, at the furthest
 * point any alternative reached, with what was found there and what could have come instead (PuppetDB's message
 * spreads the same over several lines, with the line and a caret; nfv's messages are one line).
 *
 * Bounds: MAX_PQL_LENGTH characters; MAX_DEPTH levels of nesting (parentheses, `!`, subqueries, arrays), then the
 * AST is checked as a JSON AST is. Parsing is linear in the text (each alternative is tried once at a position).
 */
import { checkDepth } from '../../model/codec.js';
import { NfvError, badRequest, clip } from '../../model/errors.js';
import { MAX_DEPTH, MAX_PQL_LENGTH } from '../../model/limits.js';

/** The entities the grammar names. */
export const PQL_ENTITIES = [
  'facts',
  'reports',
  'catalogs',
  'packages',
  'package_inventory',
  'resources',
  'nodes',
  'environments',
  'factsets',
  'fact_paths',
  'fact_contents',
  'inventory',
  'edges',
  'events',
];
/** Longest first, so that `factsets` is not read as `facts` followed by `ets`. */
const ENTITIES_LONGEST_FIRST = [...PQL_ENTITIES].sort((a, b) => b.length - a.length);
const FUNCTIONS = ['count', 'avg', 'sum', 'min', 'max', 'to_string'];
const DOTTED = ['facts', 'trusted', 'parameters'];
/** Comparison operators after a field, longest first where one begins another. */
const OPERATORS = ['~>', '~', '>=', '<=', '<', '>', '!=', '!~', '=', 'in'];

// Java's \s (PuppetDB's regular expressions are Java's), and Java's `.` (any character but a line terminator).
const S = ' \\t\\n\\v\\f\\r';
const DOT = '[^\\n\\r\\u0085\\u2028\\u2029]';
/** A terminal: a sticky regular expression, and how PuppetDB prints it among the expected things. */
const terminal = (source: string, shown: string) => ({ re: new RegExp(source, 'y'), shown: `#"${shown}"` });
const WS = terminal(`[${S}]+`, '\\s+');
const FIELD = terminal('[a-zA-Z0-9_]+\\??', '[a-zA-Z0-9_]+\\??');
const DIGITS = terminal('[0-9]+', '[0-9]+');
const QUOTED_PART = terminal(`"${DOT}*?"(?=\\.|[${S}])`, '\\".*?\\"(?=\\.|\\s)');
const MATCH_PART = terminal(`match\\(${DOT}*?\\)`, 'match\\(.*?\\)');
const PLAIN_PART = terminal(`[^${S}.",\\[\\]!<=>~]+(?:\\[[0-9]+\\])?`, '[^\\s\\.\\",\\[\\]!<=>~]+(\\[\\d+\\])?');
const DQ_BODY = new RegExp(`(?:[^"\\\\]|\\\\${DOT})*`, 'y');
const SQ_BODY = new RegExp(`(?:[^'\\\\]|\\\\${DOT})*`, 'y');

const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

type Ast = unknown;
const isPaging = (clause: Ast) =>
  Array.isArray(clause) && (clause[0] === 'limit' || clause[0] === 'offset' || clause[0] === 'order_by');

/**
 * PuppetDB's transform of a `from`: with a projection, the filter and group_by go inside the extract and the paging
 * clauses follow it in their order; otherwise the clauses stay as written.
 */
function transformFrom(entity: string, clauses: Ast[]): Ast[] {
  const paging = clauses.filter(isPaging);
  const other = clauses.filter((c) => !isPaging(c));
  const first = other[0];
  if (Array.isArray(first) && first[0] === 'extract' && other.length > 1)
    return ['from', entity, [...first, ...other.slice(1)], ...paging];
  return ['from', entity, ...clauses];
}

class Parser {
  private pos = 0;
  /** The furthest position where something was expected and not found, and what was expected there. */
  private furthest = -1;
  private expected: string[] = [];
  private depth = 0;

  constructor(private readonly text: string) {}

  /** The whole text: `[ws] from [ws]`. */
  query(): Ast[] {
    this.ws();
    const from = this.from();
    if (from !== undefined) {
      this.ws();
      if (this.pos === this.text.length) return from;
      this.miss('end of query');
    }
    throw this.failure();
  }

  // ---- terminals --------------------------------------------------------------------------------------------------

  private miss(what: string, at = this.pos): undefined {
    if (at > this.furthest) {
      this.furthest = at;
      this.expected = [what];
    } else if (at === this.furthest && !this.expected.includes(what)) this.expected.push(what);
    return undefined;
  }

  private lit(s: string): boolean {
    if (this.text.startsWith(s, this.pos)) {
      this.pos += s.length;
      return true;
    }
    this.miss(s);
    return false;
  }

  private match(t: { re: RegExp; shown: string }): string | undefined {
    t.re.lastIndex = this.pos;
    const m = t.re.exec(this.text);
    if (!m) return this.miss(t.shown);
    this.pos += m[0].length;
    return m[0];
  }

  /** Whitespace, optional or required by what the caller does with the answer. */
  private ws(): boolean {
    return this.match(WS) !== undefined;
  }

  /** Runs `parse` one level deeper; on failure the position is put back. */
  private nested<T>(parse: () => T | undefined): T | undefined {
    const start = this.pos;
    if (++this.depth > MAX_DEPTH) throw this.errorAt(start, `nested deeper than ${MAX_DEPTH} levels`);
    try {
      const result = parse();
      if (result === undefined) this.pos = start;
      return result;
    } finally {
      this.depth--;
    }
  }

  /** Tries `parse`; on failure the position is put back. */
  private attempt<T>(parse: () => T | undefined): T | undefined {
    const start = this.pos;
    const result = parse();
    if (result === undefined) this.pos = start;
    return result;
  }

  // ---- from, projection, where ------------------------------------------------------------------------------------

  /** `entity [[ws] projection] [ws] where` */
  private from(): Ast[] | undefined {
    return this.attempt(() => {
      const entity = this.entity();
      if (entity === undefined) return undefined;
      const extract = this.attempt(() => {
        this.ws();
        return this.projection();
      });
      this.ws();
      const where = this.where();
      if (where === undefined) return undefined;
      return transformFrom(entity, extract === undefined ? where : [extract, ...where]);
    });
  }

  private entity(): string | undefined {
    for (const e of ENTITIES_LONGEST_FIRST) {
      if (this.text.startsWith(e, this.pos)) {
        this.pos += e.length;
        return e;
      }
    }
    for (const e of PQL_ENTITIES) this.miss(e);
    return undefined;
  }

  /** `"[" [ws] [fieldlist] [ws] "]"` */
  private projection(): Ast[] | undefined {
    if (!this.lit('[')) return undefined;
    this.ws();
    const fields = this.attempt(() => this.fieldList()) ?? [];
    this.ws();
    return this.lit(']') ? ['extract', fields] : undefined;
  }

  /** `"{" [ws] [expression] [ws] [groupby | {paging [ws]}] {ws} "}"`: the clauses inside. */
  private where(): Ast[] | undefined {
    return this.attempt(() => {
      if (!this.lit('{')) return undefined;
      this.ws();
      const clauses: Ast[] = [];
      const expression = this.attempt(() => this.or());
      if (expression !== undefined) clauses.push(expression);
      this.ws();
      const group = this.attempt(() => this.groupBy());
      if (group !== undefined) clauses.push(group);
      else {
        for (let p = this.paging(); p !== undefined; p = this.paging()) {
          clauses.push(p);
          this.ws();
        }
      }
      this.ws();
      return this.lit('}') ? clauses : undefined;
    });
  }

  /** `"group by" ws fieldlist` */
  private groupBy(): Ast[] | undefined {
    if (!this.lit('group by') || !this.ws()) return undefined;
    const fields = this.fieldList();
    return fields === undefined ? undefined : ['group_by', ...fields];
  }

  /** `"limit" ws integer | "offset" ws integer | "order by" ws orderparam {"," [ws] orderparam}` */
  private paging(): Ast[] | undefined {
    return this.attempt(() => {
      for (const [word, name] of [
        ['limit', 'limit'],
        ['offset', 'offset'],
      ] as const) {
        if (this.lit(word)) {
          if (!this.ws()) return undefined;
          const n = this.integer();
          return n === undefined ? undefined : [name, n];
        }
      }
      if (!this.lit('order by') || !this.ws()) return undefined;
      const first = this.orderParam();
      if (first === undefined) return undefined;
      const params = [first];
      for (;;) {
        const next = this.attempt(() => {
          if (!this.lit(',')) return undefined;
          this.ws();
          return this.orderParam();
        });
        if (next === undefined) break;
        params.push(next);
      }
      return ['order_by', params];
    });
  }

  /** `!("asc" | "desc") field [ws ("asc" | "desc")] [ws]`: `f` or `[f, "desc"]` */
  private orderParam(): Ast | undefined {
    for (const word of ['asc', 'desc']) if (this.text.startsWith(word, this.pos)) return this.miss(`NOT ${word}`);
    const field = this.field();
    if (field === undefined) return undefined;
    const direction = this.attempt(() => {
      if (!this.ws()) return undefined;
      if (this.lit('asc')) return 'asc';
      return this.lit('desc') ? 'desc' : undefined;
    });
    this.ws();
    return direction === undefined ? field : [field, direction];
  }

  // ---- expressions ------------------------------------------------------------------------------------------------

  /** `and { ws "or" ws and }`, n-ary and flat at one level, as PuppetDB's transform makes it. */
  private or(): Ast | undefined {
    return this.chain('or', () => this.and());
  }

  private and(): Ast | undefined {
    return this.chain('and', () => this.not());
  }

  private chain(word: string, operand: () => Ast | undefined): Ast | undefined {
    const first = operand();
    if (first === undefined) return undefined;
    const parts = [first];
    for (;;) {
      const next = this.attempt(() => (this.ws() && this.lit(word) && this.ws() ? operand() : undefined));
      if (next === undefined) break;
      parts.push(next);
    }
    return parts.length === 1 ? first : [word, ...parts];
  }

  /** `"!" [ws] not | primary` */
  private not(): Ast | undefined {
    if (!this.lit('!')) return this.primary();
    const inner = this.nested(() => {
      this.ws();
      return this.not();
    });
    if (inner === undefined) {
      this.pos--;
      return undefined;
    }
    return ['not', inner];
  }

  /** `"(" [ws] expression [ws] ")" | subquery | condition | nullcheck` */
  private primary(): Ast | undefined {
    const start = this.pos;
    if (this.lit('(')) {
      const inner = this.nested(() => {
        this.ws();
        const e = this.or();
        if (e === undefined) return undefined;
        this.ws();
        return this.lit(')') ? e : undefined;
      });
      if (inner === undefined) this.pos = start;
      return inner;
    }
    const subquery = this.attempt(() => {
      const entity = this.entity();
      if (entity === undefined) return undefined;
      const where = this.nested(() => {
        this.ws();
        return this.where();
      });
      if (where === undefined) return undefined;
      // PuppetDB's transform takes an entity and at most one clause (a filter).
      if (where.length > 1)
        throw this.errorAt(start, 'an implicit subquery takes a filter only, not group by, limit, offset or order by');
      return ['subquery', entity, ...where];
    });
    if (subquery !== undefined) return subquery;
    return this.attempt(() => this.condition());
  }

  /** A comparison, a null check, or `in` (of one field or a list of them). */
  private condition(): Ast | undefined {
    if (this.text[this.pos] === '[') {
      this.pos++;
      this.ws();
      const fields = this.fieldList();
      if (fields === undefined) return undefined;
      this.ws();
      if (!this.lit(']')) return undefined;
      this.ws();
      if (!this.lit('in')) return undefined;
      this.ws();
      const values = this.valuesIn();
      return values === undefined ? undefined : ['in', fields, values];
    }
    this.miss('[');
    const field = this.field();
    if (field === undefined) return undefined;
    this.ws();
    if (this.lit('is null')) return ['null?', field, true];
    if (this.lit('is not null')) return ['null?', field, false];
    const op = OPERATORS.find((o) => this.lit(o));
    if (op === undefined) return undefined;
    this.ws();
    switch (op) {
      case '~': {
        const re = this.string();
        return re === undefined ? undefined : ['~', field, re];
      }
      case '~>': {
        const res = this.stringArray();
        return res === undefined ? undefined : ['~>', field, res];
      }
      case '<':
      case '<=':
      case '>':
      case '>=': {
        const bound = this.number() ?? this.string();
        return bound === undefined ? undefined : [op, field, bound];
      }
      case 'in': {
        const values = this.valuesIn();
        return values === undefined ? undefined : ['in', field, values];
      }
      default: {
        const value = this.literal();
        if (value === undefined) return undefined;
        if (op === '!=') return ['not', ['=', field, value]];
        if (op === '!~') return ['not', ['~', field, value]];
        return ['=', field, value];
      }
    }
  }

  /** The right side of `in`: a query (`entity[fields] { ... }`) or `[literal, ...]` as `["array", [...]]`. */
  private valuesIn(): Ast | undefined {
    if (this.text[this.pos] === '[') {
      const values = this.nested(() => this.literalArray());
      return values === undefined ? undefined : ['array', values];
    }
    this.miss('[');
    // The query's own surrounding whitespace is left to what follows (`... } and x = 1`).
    return this.nested(() => this.from());
  }

  // ---- fields and functions ---------------------------------------------------------------------------------------

  /** `(field | function) { [ws] "," [ws] (field | function) }` */
  private fieldList(): Ast[] | undefined {
    const first = this.fieldOrFunction();
    if (first === undefined) return undefined;
    const fields = [first];
    for (;;) {
      const next = this.attempt(() => {
        this.ws();
        if (!this.lit(',')) return undefined;
        this.ws();
        return this.fieldOrFunction();
      });
      if (next === undefined) break;
      fields.push(next);
    }
    return fields;
  }

  private fieldOrFunction(): Ast | undefined {
    const call = this.attempt(() => {
      const name = FUNCTIONS.find((f) => this.lit(f));
      if (name === undefined) return undefined;
      this.ws();
      return this.lit('(') ? this.functionArguments(name) : undefined;
    });
    return call ?? this.field();
  }

  /** After `name(`: `[ws] [(field | string) [[ws] "," [ws] string {[ws] "," [ws] string}]] [ws] ")"` */
  private functionArguments(name: string): Ast[] | undefined {
    this.ws();
    const args: Ast[] = [];
    const first = this.attempt(() => this.field() ?? this.string());
    if (first !== undefined) {
      args.push(first);
      const more = this.attempt(() => {
        this.ws();
        if (!this.lit(',')) return undefined;
        this.ws();
        return this.stringList();
      });
      if (more !== undefined) args.push(...more);
    }
    this.ws();
    return this.lit(')') ? ['function', name, ...args] : undefined;
  }

  /**
   * `[a-zA-Z0-9_]+\??`, or a dotted field of facts, trusted or parameters: `facts.os."a.b".list[0]`, kept as one
   * string (PuppetDB joins the parts with dots, quotes included).
   */
  private field(): string | undefined {
    for (const head of DOTTED) {
      if (this.text.startsWith(head, this.pos) && this.text[this.pos + head.length] === '.') {
        const start = this.pos;
        this.pos += head.length;
        const parts = [head];
        for (;;) {
          const part = this.attempt(() => {
            if (!this.lit('.')) return undefined;
            return this.match(QUOTED_PART) ?? this.match(MATCH_PART) ?? this.match(PLAIN_PART);
          });
          if (part === undefined) break;
          parts.push(part);
        }
        if (parts.length > 1) return parts.join('.');
        this.pos = start;
      }
    }
    const plain = this.match(FIELD);
    if (plain === undefined) for (const head of DOTTED) this.miss(head);
    return plain;
  }

  // ---- literals ---------------------------------------------------------------------------------------------------

  /** `string | integer | real | boolean | array` (an array is a plain list of literals) */
  private literal(): Ast | undefined {
    const value = this.string() ?? this.number();
    if (value !== undefined) return value;
    if (this.lit('true')) return true;
    if (this.lit('false')) return false;
    if (this.text[this.pos] === '[') return this.nested(() => this.literalArray());
    return this.miss('[');
  }

  /** `"[" [ws] literal {[ws] "," [ws] literal} [ws] "]"` */
  private literalArray(): Ast[] | undefined {
    if (!this.lit('[')) return undefined;
    this.ws();
    const values = this.list(() => this.literal());
    if (values === undefined) return undefined;
    this.ws();
    return this.lit(']') ? values : undefined;
  }

  /** `"[" [ws] string {[ws] "," [ws] string} [ws] "]"` */
  private stringArray(): Ast[] | undefined {
    if (!this.lit('[')) return undefined;
    this.ws();
    const values = this.stringList();
    if (values === undefined) return undefined;
    this.ws();
    return this.lit(']') ? values : undefined;
  }

  private stringList(): Ast[] | undefined {
    return this.list(() => this.string());
  }

  /** `item {[ws] "," [ws] item}` */
  private list(item: () => Ast | undefined): Ast[] | undefined {
    const first = item();
    if (first === undefined) return undefined;
    const items = [first];
    for (;;) {
      const next = this.attempt(() => {
        this.ws();
        if (!this.lit(',')) return undefined;
        this.ws();
        return item();
      });
      if (next === undefined) break;
      items.push(next);
    }
    return items;
  }

  /**
   * A double-quoted string, decoded as a JSON string (`\n`, `\"`, `\uXXXX`), or a single-quoted one, where only `\'`
   * is an escape (`'a\nb'` keeps its backslash).
   */
  private string(): string | undefined {
    const start = this.pos;
    for (const [quote, body] of [
      ['"', DQ_BODY],
      ["'", SQ_BODY],
    ] as const) {
      if (!this.lit(quote)) continue;
      body.lastIndex = this.pos;
      const content = body.exec(this.text)![0];
      this.pos += content.length;
      if (!this.lit(quote)) {
        this.pos = start;
        return undefined;
      }
      if (quote === "'") return content.replace(/\\'/g, "'");
      try {
        return JSON.parse(`"${content}"`) as string;
      } catch (e) {
        throw this.errorAt(start, `not a valid double-quoted string (${(e as Error).message})`);
      }
    }
    return undefined;
  }

  /** `["-"] digits`, 64 bits */
  private integer(): number | undefined {
    const start = this.pos;
    const digits = this.integerText();
    return digits === undefined ? undefined : this.long(digits, start);
  }

  private integerText(): string | undefined {
    const start = this.pos;
    const negative = this.lit('-');
    const digits = this.match(DIGITS);
    if (digits === undefined) {
      this.pos = start;
      return undefined;
    }
    return negative ? `-${digits}` : digits;
  }

  private long(digits: string, at: number): number {
    const n = BigInt(digits);
    if (n < LONG_MIN || n > LONG_MAX) throw this.errorAt(at, `${clip(digits)} is not a 64-bit integer`);
    return Number(digits);
  }

  /** An integer, or a real: `["-"] digits "." digits [("e" | "E") ["+" | "-"] digits]` (a double). */
  private number(): number | undefined {
    const start = this.pos;
    const whole = this.integerText();
    if (whole === undefined) return undefined;
    const real = this.attempt(() => {
      if (!this.lit('.')) return undefined;
      const fraction = this.match(DIGITS);
      if (fraction === undefined) return undefined;
      const exponent = this.attempt(() => {
        if (!this.lit('e') && !this.lit('E')) return undefined;
        const sign = this.lit('+') ? '+' : this.lit('-') ? '-' : '';
        const digits = this.match(DIGITS);
        return digits === undefined ? undefined : `E${sign}${digits}`;
      });
      return `${whole}.${fraction}${exponent ?? ''}`;
    });
    if (real === undefined) return this.long(whole, start);
    const value = Number(real);
    if (!Number.isFinite(value)) throw this.errorAt(start, `${clip(real)} is out of range`);
    return value;
  }

  // ---- errors -----------------------------------------------------------------------------------------------------

  /** `PQL parse error at line L, column C: ...`, of a position in the text. */
  private errorAt(at: number, what: string): NfvError {
    const before = this.text.slice(0, at);
    const line = before.split('\n').length;
    const column = at - before.lastIndexOf('\n');
    return badRequest(`PQL parse error at line ${line}, column ${column}: ${what}`);
  }

  /** The furthest point reached: what was there, and what was expected instead. */
  private failure(): NfvError {
    const at = Math.max(this.furthest, 0);
    const rest = this.text.slice(at).split('\n')[0]!;
    const found = at >= this.text.length ? 'the end of the query' : `'${clip(rest, 20)}'`;
    const expected = this.expected;
    const list =
      expected.length === 0
        ? ''
        : expected.length === 1
          ? `. Expected: ${expected[0]}`
          : `. Expected one of: ${expected.join(', ')}`;
    return this.errorAt(at, `found ${found}${list}`);
  }
}

/**
 * A PQL query as the v4 AST (`["from", entity, ...]`); 400 with PuppetDB's `PQL parse error at line L, column C:`
 * when it does not parse.
 */
export function parsePql(text: string): unknown[] {
  if (text.length > MAX_PQL_LENGTH) throw badRequest(`PQL query longer than ${MAX_PQL_LENGTH} characters`);
  const ast = new Parser(text).query();
  checkDepth(ast, 'query');
  return ast;
}
