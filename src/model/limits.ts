/**
 * Every bound on what a user can make nfv do, in one place (the README's "Limits" table lists the same): nothing a
 * request sends can stall a process or grow its memory without limit.
 */

/** Largest document accepted, XML or JSON, and largest request body in serve mode. */
export const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024;

/**
 * Deepest nesting accepted in any document, XML or JSON, and in query ASTs. NFV documents are about 8 levels deep and
 * inventory payloads rarely pass 20; the limit keeps recursive code far from the stack's end.
 */
export const MAX_DEPTH = 64;

/** The largest solver time limit accepted (a solve never runs unbounded; SIMULATION_DEFAULTS has the default). */
export const MAX_TIMEOUT_SECONDS = 600;

/** How long a writer waits for another process's workspace lock before giving up (503 / exit 4). */
export const DEFAULT_LOCK_TIMEOUT_MS = 5_000;

/**
 * How long nfv waits for a PostgreSQL connection, a new one or a free one of its pool, before 503. Not the lock
 * timeout: a short `--lock-timeout` asks to give up on a held lock soon, not on a server slow to fork a backend.
 */
export const DATABASE_CONNECT_TIMEOUT_MS = 10_000;

/** Serve mode: simulations waiting for a solver beyond those being solved; more are refused with 503. */
export const MAX_QUEUED_SOLVES = 8;

/** Serve mode: request body bytes buffered at once over all requests; more are refused with 503. */
export const MAX_BUFFERED_BODY_BYTES = 96 * 1024 * 1024;

/** A query regular expression longer than this is refused (matching itself is linear in the text, RE2). */
export const MAX_REGEX_LENGTH = 4_096;

/**
 * Longest PQL query accepted, in characters (the parser is linear in the text; PuppetDB sets no bound). Its nesting
 * (parentheses, `!`, subqueries, arrays) is bounded by MAX_DEPTH, and so is the AST it gives.
 */
export const MAX_PQL_LENGTH = 1024 * 1024;

/** Commands in one batch of `POST /v4/commands/batch` (the CLI's batch ingest sends several batches). */
export const MAX_BATCH = 10_000;

/** The allocation algorithms a simulation accepts (VEREFOO's names; both share one model here). */
export const ALGORITHMS = ['AP', 'MF'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/**
 * What the synthesised firewalls minimise after the requirements (docs/SEMANTICS.md): VEREFOO's fewest new firewalls,
 * then fewest rules; or least privilege first (each firewall lets through only what some reachability requirement's
 * traffic arriving there needs), then the same.
 */
export const OBJECTIVES = ['fewest-rules', 'least-privilege'] as const;
export type Objective = (typeof OBJECTIVES)[number];

/**
 * A simulation's options where none is given: read by the CLI's flags, the HTTP query and the early job of a plain
 * `nfv simulate FILE` (engine/threads/early.ts), whose answer is used only when the CLI's job has the same options.
 */
export const SIMULATION_DEFAULTS: {
  algorithm: Algorithm;
  timeoutSeconds: number;
  reconfigure: boolean;
  objective: Objective;
  effort: number;
} = {
  algorithm: 'AP',
  timeoutSeconds: 60,
  reconfigure: false,
  objective: 'fewest-rules',
  effort: 1,
};

/**
 * The largest proof effort accepted (`--effort`, `effort`): effort N gives the proof N times PROOF_WORK and solves
 * components up to N times the encoding limit whole (engine/simulate.ts, effortTuning).
 */
export const MAX_EFFORT = 100;

/**
 * The work the solver may spend proving a simulation's answer minimal (fewest new firewalls, then fewest rules), in
 * ticks (engine/solving/work.ts: assignments of our SAT solver, Z3's resource units at 10 ticks each): about 4 s
 * here, the same answer on any machine and under any load. A component not proven with it gets a fast answer that
 * meets every requirement it can, and the report says optimal="false". Every VEREFOO test input but Geant
 * (docs/ARCHITECTURE.md) is proven within 0.44 M ticks.
 */
export const PROOF_WORK = 30_000_000;

/**
 * What the refined classes' proof after a proven coarse answer may spend of what PROOF_WORK leaves (simulate.ts):
 * the coarse answer stands, proven over whole classes, if it fails, so a failure costs at most this. The Zoo's
 * refined proofs take 4.0 M (Fatman NAT) and 13.5 M ticks (Belnet2008 plain); Aarnet plain's and Carnet's ran out
 * of the 29.7 M left them (docs/performance-log.md, wt-ref13).
 */
export const REFINED_WORK = 15_000_000;

/**
 * What a small graph's refined classes, proven before its coarse answer is sought (simulate.ts), may spend of
 * PROOF_WORK: a third is left to the coarse search if it fails (the refined classes are not tried again). Those of
 * VEREFOO's inputs take at most 0.49 M ticks (Test8_2), the Zoo's at most 16.8 M (Amres NAT); with the whole budget,
 * one that failed left the coarse search nothing (Amres plain: a fast answer of 17 rules, 12 proven since)
 * (docs/performance-log.md, "The refined classes first, in a pool of their own" and "The refined classes tried once").
 */
export const REFINED_FIRST_WORK = 20_000_000;

/**
 * The work the lower bounds of an answer not proven minimal may spend (engine/solving/bounds.ts), in the same ticks:
 * about 1 s of our solver at most, N times it at `--effort N`. A bound cut short is lower, never wrong.
 */
export const BOUND_WORK = 5_000_000;

/** Seconds an inventory query may run in PostgreSQL (statement_timeout) before it is stopped with 503. */
export const MAX_QUERY_SECONDS = 30;

/** Memory an inventory query may sort or hash in, per PostgreSQL process, before it spills to temporary files. */
export const QUERY_WORK_MEM_MB = 64;

/**
 * Serve mode, plain and TLS alike (one set of settings for both listeners): the request line and headers, in bytes
 * (Node's default, set here so that neither listener can drift); how long a client may take to send its headers, and
 * its whole request (Node's defaults; 408 and the connection closed); how long an idle keep-alive connection stays.
 */
export const MAX_HEADER_BYTES = 16 * 1024;
export const HEADERS_TIMEOUT_MS = 60_000;
export const REQUEST_TIMEOUT_MS = 300_000;
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** Serve over TLS: how long a client may take to finish the handshake before its connection is closed. */
export const TLS_HANDSHAKE_TIMEOUT_MS = 60_000;

/** Largest certificate, key or CA file serve reads (--tls-*); a CA bundle of every public root is about 200 KB. */
export const MAX_TLS_FILE_BYTES = 1024 * 1024;

/**
 * Importing a live firewall (iptables-save, nft JSON): the most lines read, the deepest chain of jumps, the most
 * packet boxes a node's nfv rules may hold (its RETURNs repeat the callers' rest; the analyses' list never needs
 * this bound: unfold.ts keeps RETURNs as except boxes), and the
 * most nfv rules one live line may become (a prefix is one, the complement of a /24 about 20; only addresses that
 * are products of octet ranges, such as 10.0-3.5-6.0/24, take more).
 */
export const MAX_IMPORT_LINES = 200_000;
export const MAX_IMPORT_DEPTH = 64;
export const MAX_IMPORT_BOXES = 1_000_000;
export const MAX_RULES_PER_LINE = 1024;
