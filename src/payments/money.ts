import type { CommandAmount } from '../providers/provider';
/**
 * Money as exact integer minor units (docs/rest-api.md#money): amounts travel as decimal strings
 * in the currency's own exponent ("49.90" EUR, "5000" JPY, "1.250" BHD) and are never floats here.
 */

export type MoneyErrorCode =
  | 'MONEY.UNKNOWN_CURRENCY'
  | 'MONEY.INVALID_AMOUNT'
  | 'MONEY.TOO_MANY_DECIMALS'
  | 'MONEY.CURRENCY_MISMATCH';

export class MoneyError extends Error {
  constructor(
    readonly code: MoneyErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'MoneyError';
  }
}

/** ISO 4217 minor unit: the number of decimals of an amount in the currency. */
export type CurrencyExponent = 0 | 2 | 3 | 4;

/**
 * ISO 4217 "list one" codes with their minor unit, as of amendment 180 (effective 2026-01-01).
 *
 * Left out on purpose: codes whose minor unit is "N.A." — precious metals (XAU, XAG, XPT, XPD),
 * IMF/bond/regional units of account (XDR, XSU, XUA, XBA, XBB, XBC, XBD), the testing code XTS
 * and "no currency" XXX. They are not payment currencies and have no exponent to parse against.
 * Fund codes that do have a minor unit (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW, XAD) stay:
 * they are list-one codes and cost nothing to accept.
 *
 * Kept although already moved to the historic list: ANG (replaced by XCG, 2025-03-31) and BGN
 * (Bulgaria joined the euro, 2026-01-01), so that late refunds and disputes of payments made in
 * them still parse. Codes withdrawn before 2025 (CUC, HRK, SLL, ZWL, VEF, MRO, STD, BYR…) are out.
 */
export const CURRENCY_EXPONENTS: Readonly<Record<string, CurrencyExponent>> = Object.freeze({
  AED: 2, AFN: 2, ALL: 2, AMD: 2, ANG: 2, AOA: 2, ARS: 2, AUD: 2, AWG: 2, AZN: 2,
  BAM: 2, BBD: 2, BDT: 2, BGN: 2, BHD: 3, BIF: 0, BMD: 2, BND: 2, BOB: 2, BOV: 2,
  BRL: 2, BSD: 2, BTN: 2, BWP: 2, BYN: 2, BZD: 2,
  CAD: 2, CDF: 2, CHE: 2, CHF: 2, CHW: 2, CLF: 4, CLP: 0, CNY: 2, COP: 2, COU: 2,
  CRC: 2, CUP: 2, CVE: 2, CZK: 2,
  DJF: 0, DKK: 2, DOP: 2, DZD: 2,
  EGP: 2, ERN: 2, ETB: 2, EUR: 2,
  FJD: 2, FKP: 2,
  GBP: 2, GEL: 2, GHS: 2, GIP: 2, GMD: 2, GNF: 0, GTQ: 2, GYD: 2,
  HKD: 2, HNL: 2, HTG: 2, HUF: 2,
  IDR: 2, ILS: 2, INR: 2, IQD: 3, IRR: 2, ISK: 0,
  JMD: 2, JOD: 3, JPY: 0,
  KES: 2, KGS: 2, KHR: 2, KMF: 0, KPW: 2, KRW: 0, KWD: 3, KYD: 2, KZT: 2,
  LAK: 2, LBP: 2, LKR: 2, LRD: 2, LSL: 2, LYD: 3,
  MAD: 2, MDL: 2, MGA: 2, MKD: 2, MMK: 2, MNT: 2, MOP: 2, MRU: 2, MUR: 2, MVR: 2,
  MWK: 2, MXN: 2, MXV: 2, MYR: 2, MZN: 2,
  NAD: 2, NGN: 2, NIO: 2, NOK: 2, NPR: 2, NZD: 2,
  OMR: 3,
  PAB: 2, PEN: 2, PGK: 2, PHP: 2, PKR: 2, PLN: 2, PYG: 0,
  QAR: 2,
  RON: 2, RSD: 2, RUB: 2, RWF: 0,
  SAR: 2, SBD: 2, SCR: 2, SDG: 2, SEK: 2, SGD: 2, SHP: 2, SLE: 2, SOS: 2, SRD: 2,
  SSP: 2, STN: 2, SVC: 2, SYP: 2, SZL: 2,
  THB: 2, TJS: 2, TMT: 2, TND: 3, TOP: 2, TRY: 2, TTD: 2, TWD: 2, TZS: 2,
  UAH: 2, UGX: 0, USD: 2, USN: 2, UYI: 0, UYU: 2, UYW: 4, UZS: 2,
  VED: 2, VES: 2, VND: 0, VUV: 0,
  WST: 2,
  XAD: 2, XAF: 0, XCD: 2, XCG: 2, XOF: 0, XPF: 0,
  YER: 2,
  ZAR: 2, ZMW: 2, ZWG: 2,
});

/** ISO 4217 exponent of an active currency code (upper case), or undefined. */
export function currencyExponent(code: string): number | undefined {
  // Own properties only: "toString" or "__proto__" must not look like currencies.
  return typeof code === 'string' && Object.hasOwn(CURRENCY_EXPONENTS, code) ? CURRENCY_EXPONENTS[code] : undefined;
}

export function isCurrency(code: string): boolean {
  return currencyExponent(code) !== undefined;
}

/** Minor units must fit a PostgreSQL bigint column. */
const MAX_MINOR = 2n ** 63n - 1n;
const MAX_INTEGER_DIGITS = 18;
// ASCII digits only: `\d` would be too, but [0-9] says so; no sign, exponent, separators or blanks.
const DECIMAL = /^([0-9]+)(?:\.([0-9]+))?$/;
const DIGITS = /^[0-9]+$/;

export class Money {
  private constructor(
    readonly minor: bigint,
    readonly currency: string,
  ) {
    Object.freeze(this);
  }

  /**
   * "49.90" EUR → 4990n; fewer decimals than the exponent are fine ("49.9" → 4990n), more are
   * MONEY.TOO_MANY_DECIMALS (even trailing zeros). Leading zeros and zero are accepted; at most
   * 18 integer digits (leading zeros not counted), and the result must fit a PostgreSQL bigint.
   */
  static parse(decimal: string, currency: string): Money {
    const exponent = requireExponent(currency);
    const match = typeof decimal === 'string' ? DECIMAL.exec(decimal) : null;
    if (!match) throw new MoneyError('MONEY.INVALID_AMOUNT', `Not a decimal amount: ${show(decimal)}`);
    const [, integer, fraction = ''] = match;
    if (fraction.length > exponent) {
      throw new MoneyError(
        'MONEY.TOO_MANY_DECIMALS',
        `${show(decimal)} has ${fraction.length} decimals; ${currency} has ${exponent}`,
      );
    }
    if (integer.replace(/^0+/, '').length > MAX_INTEGER_DIGITS) {
      throw new MoneyError('MONEY.INVALID_AMOUNT', `More than ${MAX_INTEGER_DIGITS} integer digits: ${show(decimal)}`);
    }
    // Only ASCII digits reach BigInt, so the conversion is exact.
    return Money.checked(BigInt(integer + fraction.padEnd(exponent, '0')), currency, decimal);
  }

  /** From integer minor units: a bigint, a safe non-negative integer number, or a string of digits. */
  static fromMinor(minor: bigint | number | string, currency: string): Money {
    requireExponent(currency);
    let value: bigint;
    if (typeof minor === 'bigint') {
      value = minor;
    } else if (typeof minor === 'number' && Number.isSafeInteger(minor)) {
      value = BigInt(minor);
    } else if (typeof minor === 'string' && DIGITS.test(minor)) {
      value = BigInt(minor);
    } else {
      throw new MoneyError('MONEY.INVALID_AMOUNT', `Not integer minor units: ${show(minor)}`);
    }
    return Money.checked(value, currency, minor);
  }

  static zero(currency: string): Money {
    requireExponent(currency);
    return new Money(0n, currency);
  }

  /** "49.90", "5000", "1.250", "0.00": always exactly the currency's exponent digits. */
  toDecimal(): string {
    const exponent = requireExponent(this.currency);
    const digits = this.minor.toString();
    if (exponent === 0) return digits;
    const padded = digits.padStart(exponent + 1, '0');
    return `${padded.slice(0, -exponent)}.${padded.slice(-exponent)}`;
  }

  /** Same currency and same minor units. */
  equals(other: Money): boolean {
    return this.currency === other.currency && this.minor === other.minor;
  }

  /** Throws MONEY.CURRENCY_MISMATCH across currencies: 10 JPY and 10 EUR have no order. */
  compare(other: Money): -1 | 0 | 1 {
    if (this.currency !== other.currency) {
      throw new MoneyError('MONEY.CURRENCY_MISMATCH', `Cannot compare ${this.currency} with ${other.currency}`);
    }
    return this.minor < other.minor ? -1 : this.minor > other.minor ? 1 : 0;
  }

  isZero(): boolean {
    return this.minor === 0n;
  }

  /** Serialised as the contract's decimal string, never as a number. */
  toJSON(): string {
    return this.toDecimal();
  }

  private static checked(minor: bigint, currency: string, input: unknown): Money {
    if (minor < 0n || minor > MAX_MINOR) {
      throw new MoneyError('MONEY.INVALID_AMOUNT', `Out of range (0 to 2^63-1 minor units): ${show(input)}`);
    }
    return new Money(minor, currency);
  }
}

function requireExponent(currency: string): number {
  const exponent = currencyExponent(currency);
  if (exponent === undefined) {
    throw new MoneyError('MONEY.UNKNOWN_CURRENCY', `Not an ISO 4217 currency code (upper case): ${show(currency)}`);
  }
  return exponent;
}

/** The offending input for an error message, cut short: amounts come from untrusted bodies. */
function show(value: unknown): string {
  const text =
    typeof value === 'string'
      ? JSON.stringify(value)
      : typeof value === 'bigint'
        ? `${value}n`
        : typeof value === 'object' && value !== null
          ? Object.prototype.toString.call(value)
          : String(value);
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

/** An amount as a payment command or a poll gives it to the provider: minor units and the currency's decimal string. */
export function commandAmount(money: Money): CommandAmount {
  return { minor: money.minor, decimal: money.toDecimal(), currency: money.currency };
}
