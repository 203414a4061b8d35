/**
 * Checks of what a workspace file holds, for the areas' decoders: each throws an Error saying, in a few words,
 * what is wrong and where. They check the structure nfv relies on (lists, ids, counters), not every field.
 */
type Obj = Record<string, unknown>;

export function object(value: unknown, where: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where} is not an object`);
  return value as Obj;
}

export function array(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new Error(`${where} is not a list`);
  return value;
}

export function id(value: unknown, where: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) throw new Error(`${where} is not an id`);
  return value as number;
}

/** The same object with a null prototype, so that keys such as `__proto__` or `constructor` are plain data. */
export function dictionary<V>(
  value: unknown,
  where: string,
  item: (v: unknown, where: string) => V,
): Record<string, V> {
  const out = Object.create(null) as Record<string, V>;
  for (const [k, v] of Object.entries(object(value, where)))
    out[k] = item(v, `${where}[${JSON.stringify(k).slice(0, 60)}]`);
  return out;
}

/**
 * Ids handed out from counters: each unique within its kind and never above the kind's counter (otherwise the
 * counter would hand out an id that is already taken).
 */
export class IdLedger {
  private readonly seen = new Map<string, Set<number>>();

  add(kind: string, value: unknown, where: string): number {
    const n = id(value, `${where}.id`);
    let set = this.seen.get(kind);
    if (!set) this.seen.set(kind, (set = new Set()));
    if (set.has(n)) throw new Error(`${kind} id ${n} appears twice`);
    set.add(n);
    return n;
  }

  /** Checks the counters object against the ids seen. */
  check(counters: unknown, where = 'counters'): void {
    const c = object(counters, where);
    for (const [k, v] of Object.entries(c)) id(v, `${where}.${k}`);
    for (const [kind, ids] of this.seen) {
      const max = Math.max(...ids);
      const counter = (Object.hasOwn(c, kind) ? c[kind] : 0) as number;
      if (counter < max) throw new Error(`${where}.${kind} is ${counter} but ${kind} id ${max} exists`);
    }
  }
}
