import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { CURRENCY_EXPONENTS, currencyExponent, isCurrency, Money, MoneyError, type MoneyErrorCode } from './money';

/** The MoneyError code `fn` throws, or undefined when it returns; any other error fails the test. */
function errorCode(fn: () => unknown): MoneyErrorCode | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof MoneyError) return error.code;
    throw error;
  }
  return undefined;
}

describe('Money.parse', () => {
  it.each([
    ['5000', 'JPY', 5000n],
    ['49.90', 'EUR', 4990n],
    ['1.250', 'BHD', 1250n],
  ])('round-trips %s %s exactly', (decimal, currency, minor) => {
    const money = Money.parse(decimal, currency);
    expect(money.minor).toBe(minor);
    expect(money.currency).toBe(currency);
    expect(money.toDecimal()).toBe(decimal);
  });

  it('accepts fewer decimals than the exponent and pads them on output', () => {
    const money = Money.parse('49.9', 'EUR');
    expect(money.minor).toBe(4990n);
    expect(money.toDecimal()).toBe('49.90');
    expect(Money.parse('49', 'EUR').minor).toBe(4900n);
    expect(Money.parse('1.25', 'BHD').toDecimal()).toBe('1.250');
    expect(Money.parse('0.5', 'CLF').minor).toBe(5000n);
  });

  it('accepts leading zeros and zero', () => {
    expect(Money.parse('007.50', 'EUR').minor).toBe(750n);
    expect(Money.parse('007.50', 'EUR').toDecimal()).toBe('7.50');
    expect(Money.parse('0', 'EUR').toDecimal()).toBe('0.00');
    expect(Money.parse('0.0', 'EUR').minor).toBe(0n);
    expect(Money.parse('0', 'JPY').toDecimal()).toBe('0');
    expect(Money.parse('0.001', 'KWD').toDecimal()).toBe('0.001');
  });

  it.each([
    '-1',
    '+1',
    '1e3',
    ' 1',
    '1 ',
    '1\n',
    '1.',
    '.5',
    '',
    '.',
    '0x10',
    '1,00',
    '1_000',
    '1.2.3',
    '١٢',
    '１２',
    'Infinity',
    'NaN',
  ])('rejects %j as MONEY.INVALID_AMOUNT', (decimal) => {
    expect(errorCode(() => Money.parse(decimal, 'EUR'))).toBe('MONEY.INVALID_AMOUNT');
  });

  it('rejects a value that is not a string as MONEY.INVALID_AMOUNT', () => {
    expect(errorCode(() => Money.parse(49.9 as unknown as string, 'EUR'))).toBe('MONEY.INVALID_AMOUNT');
    expect(errorCode(() => Money.parse(null as unknown as string, 'EUR'))).toBe('MONEY.INVALID_AMOUNT');
  });

  it.each([
    ['49.901', 'EUR'],
    ['49.900', 'EUR'],
    ['5000.0', 'JPY'],
    ['1.2500', 'BHD'],
    ['1.00001', 'CLF'],
  ])('rejects %s %s as MONEY.TOO_MANY_DECIMALS', (decimal, currency) => {
    expect(errorCode(() => Money.parse(decimal, currency))).toBe('MONEY.TOO_MANY_DECIMALS');
  });

  it('accepts 18 integer digits and rejects 19 as MONEY.INVALID_AMOUNT', () => {
    expect(Money.parse('999999999999999999', 'JPY').minor).toBe(999_999_999_999_999_999n);
    expect(errorCode(() => Money.parse('1000000000000000000', 'JPY'))).toBe('MONEY.INVALID_AMOUNT');
    expect(errorCode(() => Money.parse('1000000000000000000.00', 'EUR'))).toBe('MONEY.INVALID_AMOUNT');
    // Leading zeros are not digits of the amount.
    expect(Money.parse('0000000000000000001', 'JPY').minor).toBe(1n);
  });

  it('rejects amounts whose minor units overflow a PostgreSQL bigint', () => {
    expect(Money.parse('92233720368547758.07', 'EUR').minor).toBe(9_223_372_036_854_775_807n);
    expect(errorCode(() => Money.parse('92233720368547758.08', 'EUR'))).toBe('MONEY.INVALID_AMOUNT');
    expect(errorCode(() => Money.parse('999999999999999999', 'BHD'))).toBe('MONEY.INVALID_AMOUNT');
  });

  it.each(['EUX', 'eur', 'Eur', '', 'EURO', 'XAU', 'XXX', 'XTS', 'XDR', 'HRK', 'CUC', 'toString', '__proto__'])(
    'rejects currency %j as MONEY.UNKNOWN_CURRENCY',
    (currency) => {
      expect(errorCode(() => Money.parse('1.00', currency))).toBe('MONEY.UNKNOWN_CURRENCY');
    },
  );

  it('throws MoneyError, an Error with a code and a message', () => {
    let thrown: unknown;
    try {
      Money.parse('49.901', 'EUR');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).toBeInstanceOf(MoneyError);
    expect((thrown as MoneyError).name).toBe('MoneyError');
    expect((thrown as MoneyError).code).toBe('MONEY.TOO_MANY_DECIMALS');
    expect((thrown as MoneyError).message).toBe('"49.901" has 3 decimals; EUR has 2');
  });

  it('keeps error messages short whatever the input', () => {
    let thrown: unknown;
    try {
      Money.parse('1'.repeat(10_000) + 'x', 'EUR');
    } catch (error) {
      thrown = error;
    }
    expect((thrown as MoneyError).code).toBe('MONEY.INVALID_AMOUNT');
    expect((thrown as MoneyError).message.length).toBeLessThan(120);
  });
});

describe('currencyExponent / isCurrency', () => {
  it.each([
    ['JPY', 0],
    ['KRW', 0],
    ['EUR', 2],
    ['USD', 2],
    ['BHD', 3],
    ['KWD', 3],
    ['JOD', 3],
    ['OMR', 3],
    ['TND', 3],
    ['CLF', 4],
  ])('%s has exponent %i', (code, exponent) => {
    expect(currencyExponent(code)).toBe(exponent);
    expect(isCurrency(code)).toBe(true);
  });

  const notCurrencies = ['EUX', 'eur', 'usd', '', 'XAU', 'XAG', 'XPT', 'XPD', 'XDR', 'XSU', 'XUA', 'XBA', 'XTS', 'XXX'];
  it.each([...notCurrencies, 'constructor', 'hasOwnProperty', '__proto__'])('%j is not a currency', (code) => {
    expect(currencyExponent(code)).toBeUndefined();
    expect(isCurrency(code)).toBe(false);
  });
});

describe('Money.fromMinor', () => {
  it('takes a number, a bigint or a string of digits', () => {
    expect(Money.fromMinor(4990, 'EUR').toDecimal()).toBe('49.90');
    expect(Money.fromMinor(4990n, 'EUR').toDecimal()).toBe('49.90');
    expect(Money.fromMinor('4990', 'EUR').toDecimal()).toBe('49.90');
    expect(Money.fromMinor(5000, 'JPY').toDecimal()).toBe('5000');
    expect(Money.fromMinor(1250n, 'BHD').toDecimal()).toBe('1.250');
    expect(Money.fromMinor(5, 'EUR').toDecimal()).toBe('0.05');
    expect(Money.fromMinor(5, 'KWD').toDecimal()).toBe('0.005');
    expect(Money.fromMinor(0, 'EUR').toDecimal()).toBe('0.00');
    expect(Money.fromMinor('0042', 'EUR').minor).toBe(42n);
  });

  it('accepts the edges: the largest safe integer and the largest PostgreSQL bigint', () => {
    expect(Money.fromMinor(Number.MAX_SAFE_INTEGER, 'JPY').minor).toBe(9_007_199_254_740_991n);
    expect(Money.fromMinor(2n ** 63n - 1n, 'EUR').toDecimal()).toBe('92233720368547758.07');
    expect(Money.fromMinor('9223372036854775807', 'EUR').minor).toBe(2n ** 63n - 1n);
  });

  it.each<[string, unknown]>([
    ['a fraction', 4990.5],
    ['a negative number', -1],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['an unsafe integer', Number.MAX_SAFE_INTEGER + 2],
    ['a negative bigint', -1n],
    ['a bigint past 2^63-1', 2n ** 63n],
    ['a string past 2^63-1', '9223372036854775808'],
    ['a string with a letter', '12a'],
    ['an empty string', ''],
    ['a signed string', '-1'],
    ['a decimal string', '49.90'],
    ['an exponent string', '1e3'],
    ['a padded string', ' 1'],
    ['null', null],
    ['undefined', undefined],
    ['an object', { minor: 1 }],
  ])('rejects %s as MONEY.INVALID_AMOUNT', (_label, minor) => {
    expect(errorCode(() => Money.fromMinor(minor as bigint, 'EUR'))).toBe('MONEY.INVALID_AMOUNT');
  });

  it('rejects an unknown currency as MONEY.UNKNOWN_CURRENCY', () => {
    expect(errorCode(() => Money.fromMinor(4990, 'eur'))).toBe('MONEY.UNKNOWN_CURRENCY');
    expect(errorCode(() => Money.fromMinor(4990, 'EUX'))).toBe('MONEY.UNKNOWN_CURRENCY');
  });
});

describe('Money.zero, equals, compare, isZero, toJSON', () => {
  it('zero is zero in the currency exponent', () => {
    expect(Money.zero('EUR').toDecimal()).toBe('0.00');
    expect(Money.zero('JPY').toDecimal()).toBe('0');
    expect(Money.zero('CLF').toDecimal()).toBe('0.0000');
    expect(Money.zero('EUR').isZero()).toBe(true);
    expect(Money.parse('0.01', 'EUR').isZero()).toBe(false);
    expect(errorCode(() => Money.zero('eur'))).toBe('MONEY.UNKNOWN_CURRENCY');
  });

  it('equals needs the same currency and the same minor units', () => {
    expect(Money.parse('49.9', 'EUR').equals(Money.fromMinor(4990, 'EUR'))).toBe(true);
    expect(Money.parse('49.90', 'EUR').equals(Money.parse('49.91', 'EUR'))).toBe(false);
    expect(Money.fromMinor(4990, 'EUR').equals(Money.fromMinor(4990, 'USD'))).toBe(false);
    expect(Money.zero('EUR').equals(Money.zero('JPY'))).toBe(false);
  });

  it('compare orders amounts of one currency', () => {
    const a = Money.parse('49.90', 'EUR');
    const b = Money.parse('50', 'EUR');
    expect(a.compare(b)).toBe(-1);
    expect(b.compare(a)).toBe(1);
    expect(a.compare(Money.fromMinor(4990n, 'EUR'))).toBe(0);
  });

  it('compare throws MONEY.CURRENCY_MISMATCH across currencies', () => {
    const eur = Money.fromMinor(10, 'EUR');
    const jpy = Money.fromMinor(10, 'JPY');
    expect(errorCode(() => eur.compare(jpy))).toBe('MONEY.CURRENCY_MISMATCH');
    expect(errorCode(() => Money.zero('USD').compare(Money.zero('USN')))).toBe('MONEY.CURRENCY_MISMATCH');
  });

  it('serialises to the decimal string', () => {
    expect(JSON.stringify({ amount: Money.parse('49.9', 'EUR') })).toBe('{"amount":"49.90"}');
    expect(JSON.stringify([Money.fromMinor(5000, 'JPY'), Money.fromMinor(1250, 'BHD')])).toBe('["5000","1.250"]');
  });

  it('is immutable', () => {
    const money = Money.parse('1.00', 'EUR');
    expect(Object.isFrozen(money)).toBe(true);
    expect(Object.isFrozen(CURRENCY_EXPONENTS)).toBe(true);
  });
});

describe('round trip property', () => {
  const codes = Object.keys(CURRENCY_EXPONENTS);

  it('parse(fromMinor(m, c).toDecimal(), c).minor === m for every currency and m in [0, 10^15]', () => {
    fc.assert(
      fc.property(fc.constantFrom(...codes), fc.bigInt({ min: 0n, max: 10n ** 15n }), (currency, minor) => {
        const decimal = Money.fromMinor(minor, currency).toDecimal();
        const back = Money.parse(decimal, currency);
        return back.minor === minor && back.toDecimal() === decimal;
      }),
      { numRuns: 2000 },
    );
  });
});

describe('CURRENCY_EXPONENTS', () => {
  const codes = Object.keys(CURRENCY_EXPONENTS);

  it('has only upper-case three-letter codes', () => {
    for (const code of codes) expect(code).toMatch(/^[A-Z]{3}$/);
  });

  it('has no duplicate code in its source literal', () => {
    // An object literal keeps the last of two equal keys, so duplicates only show in the source.
    const source = readFileSync(join(__dirname, 'money.ts'), 'utf8');
    const literal = /CURRENCY_EXPONENTS[^{]*\{([^}]*)\}/.exec(source)?.[1] ?? '';
    const keys = [...literal.matchAll(/\b([A-Za-z]+)\s*:/g)].map((match) => match[1]);
    expect(keys.length).toBe(codes.length);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('has only exponents 0, 2, 3 or 4', () => {
    for (const code of codes) expect([0, 2, 3, 4]).toContain(CURRENCY_EXPONENTS[code]);
  });

  it('has exactly the ISO 4217 currencies whose minor unit is not 2', () => {
    const byExponent = (exponent: number) => codes.filter((code) => CURRENCY_EXPONENTS[code] === exponent).sort();
    expect(byExponent(0)).toEqual([
      'BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF',
    ]);
    expect(byExponent(3)).toEqual(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']);
    expect(byExponent(4)).toEqual(['CLF', 'UYW']);
  });

  it('covers the active list and leaves out codes without a minor unit', () => {
    const active = `AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD
      CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP
      GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP
      LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN
      PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT
      TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAD XAF XCD XCG XOF XPF YER ZAR ZMW
      ZWG`.split(/\s+/);
    // Withdrawn recently and kept on purpose (see the table's comment).
    const recentlyWithdrawn = ['ANG', 'BGN'];
    expect(codes.slice().sort()).toEqual([...active, ...recentlyWithdrawn].sort());
    for (const code of ['XAU', 'XAG', 'XPT', 'XPD', 'XDR', 'XSU', 'XUA', 'XBA', 'XBB', 'XBC', 'XBD', 'XTS', 'XXX']) {
      expect(codes).not.toContain(code);
    }
    for (const code of ['CUC', 'HRK', 'SLL', 'ZWL', 'VEF', 'MRO', 'STD', 'BYR', 'LTL']) {
      expect(codes).not.toContain(code);
    }
  });
});
