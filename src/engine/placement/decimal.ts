/**
 * Exact node latency (P4): `nrOfOperations <= maxNodeLatency * cpu * 10^9`, with cpu in GHz possibly fractional. A
 * JavaScript number is read as the decimal it prints as (2.4 is 24/10, not the nearest binary fraction), and the
 * comparison runs on BigInt, since the product reaches about 4.6e27.
 */

/** digits / 10^scale, digits >= 0. */
export interface Decimal {
  digits: bigint;
  scale: number;
}

const DECIMAL = /^(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;

/** The decimal a non-negative finite number prints as (also in exponent form, 1e-7 or 1.5e+21). */
export function exactDecimal(value: number): Decimal {
  const m = DECIMAL.exec(String(value));
  if (!m || value < 0) throw new RangeError(`not a non-negative finite number: ${value}`);
  const fraction = m[2] ?? '';
  const scale = fraction.length - Number(m[3] ?? 0);
  const digits = BigInt(m[1]! + fraction);
  return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 };
}

const GIGA = 10n ** 9n;

/**
 * Whether `operations` run within `maxLatency` seconds at `cpu` GHz. No bound: always. cpu 0 runs nothing but zero
 * operations (infinite latency otherwise).
 */
export function latencyFits(operations: number, maxLatency: number | undefined, cpu: Decimal): boolean {
  if (maxLatency === undefined) return true;
  // operations <= maxLatency * digits / 10^scale * 10^9, both sides times 10^scale.
  return BigInt(operations) * 10n ** BigInt(cpu.scale) <= BigInt(maxLatency) * cpu.digits * GIGA;
}
