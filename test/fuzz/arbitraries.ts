/**
 * fast-check arbitraries of fuzz cases: authentic deliveries of each provider, weird bodies signed
 * properly, and mutations after signing. Plain data, so a failing case prints readably.
 */
import fc from 'fast-check';
import {
  BodySpec,
  CaseSpec,
  DECLARED_ACCOUNTS,
  Deep,
  EndpointSpec,
  FuzzProvider,
  HeaderProvider,
  IdHeader,
  Json,
  MAX_BODY,
  Mutation,
  PROVIDERS,
  RawEdit,
  SigningSpec,
  Target,
  Timestamp,
  V1A_EDITS,
} from './model';

export const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });

// ---------------------------------------------------------------------------------------------
// Strings

/** Characters Node's client sends in a header value (0x80–0xff go out as UTF-8 and come back as latin1). */
const headerChar = fc.oneof(
  w(10, fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:')),
  w(2, fc.constantFrom(' ', '\t', '"', ',', ';', '=', '\\', '/', '%', '{', '}', '*', '~')),
  w(1, fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c))),
);
export const headerString = (minLength: number, maxLength: number) => fc.string({ unit: headerChar, minLength, maxLength });

const lone = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

/** Ids that should pass anywhere: ASCII letters, digits and `_.:-`. A small pool makes duplicates. */
export const normalId = fc.oneof(
  w(2, fc.constantFrom('evt_pool_1', 'evt_pool_2', 'evt_pool_3', 'evt_pool_4')),
  w(6, fc.stringMatching(/^evt_[A-Za-z0-9]{10,24}$/)),
  w(2, fc.uuid()),
  w(1, fc.constantFrom('x'.repeat(255), 'a', 'evt:1.2-3_4')),
);

/** Odd ids: empty, huge, control characters, NUL, lone surrogates (a pool, so they meet), unicode, injection-looking text. */
export const oddIdString = fc.oneof(
  w(
    6,
    fc.constantFrom(
      '',
      ' ',
      'evt 1',
      ' evt_1',
      'evt_1 ',
      'x'.repeat(256),
      'y'.repeat(10_000),
      'evt\u0000nul',
      '\u0000',
      'evt\u001f',
      'evt\u007f',
      'evt\n1',
      'evt\t1',
      'evt_\ud800',
      'evt_\udbff',
      'evt_\udc00',
      'evt_\ud83d',
      'evt_\ufffd',
      'evt_\u00e9',
      'evt_e\u0301',
      'evt_😀',
      '\u202eevt',
      'evt\u200b',
      '\ufeffevt',
      'évt_Ω',
      'evt_\u0085',
      'evt_\u2028',
      'evt_\u2029',
      'evt_\u009b31m',
      'evt_\u00ad',
      'evt_\u061c',
      'evt_\u2066x\u2069',
      'evt_\u{e0001}',
      '"',
      '\\',
      "' OR 1=1 --",
      '%00',
      '../../etc/passwd',
      '<script>',
      'null',
      '__proto__',
      'constructor',
      'evt_' + 'é'.repeat(200),
      '😀'.repeat(200),
      '😀'.repeat(128),
    ),
  ),
  w(2, fc.tuple(fc.stringMatching(/^evt_[a-z]{0,3}$/), lone).map(([p, c]) => p + c)),
  w(2, fc.string({ unit: 'binary', maxLength: 40 })),
  w(1, fc.string({ unit: 'grapheme', maxLength: 20 })),
  w(2, fc.string({ maxLength: 300 })),
  w(1, fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 4 })),
);

/** Wrong types where a string is expected. */
export const wrongType: fc.Arbitrary<Json> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);

export const oddValue: fc.Arbitrary<Json> = fc.oneof(w(3, oddIdString), w(1, wrongType));

export const anyJson: fc.Arbitrary<Json> = fc.oneof(
  w(4, fc.jsonValue({ maxDepth: 2 })),
  w(1, fc.string({ unit: 'binary', maxLength: 20 })),
  w(1, fc.tuple(fc.string({ maxLength: 3 }), lone).map(([a, b]) => a + b)),
  w(1, wrongType),
);

// ---------------------------------------------------------------------------------------------
// Bodies

export const deep: fc.Arbitrary<Deep> = fc.record({
  kind: fc.constantFrom('[' as const, '{' as const),
  depth: fc.oneof(w(2, fc.integer({ min: 1, max: 30 })), w(2, fc.integer({ min: 31, max: 2_000 })), w(1, fc.integer({ min: 2_000, max: 30_000 }))),
  where: fc.constantFrom('field' as const, 'data' as const, 'whole' as const),
});

export const rawEdit: fc.Arbitrary<RawEdit> = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), pos: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({
    op: fc.constant('insert' as const),
    pos: fc.nat(),
    bytes: fc.constantFrom([0xff], [0xfe], [0xc0, 0x80], [0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xc3], [0x00], [0x0a], [0x22], [0x2c]),
  }),
  fc.record({ op: fc.constant('truncate' as const), cut: fc.integer({ min: 1, max: 60 }) }),
  fc.constant({ op: 'bom' as const }),
  fc.record({ op: fc.constant('wrap' as const), before: fc.constantFrom('', ' ', '\n', '\r\n\t '), after: fc.constantFrom('', ' ', '\n', '\u0000', '\u3000') }),
  fc.record({
    op: fc.constant('replace' as const),
    text: fc.oneof(fc.constantFrom('', 'null', '[]', '[1,2]', '"str"', '42', 'true', '{', '{}', 'not json', '{"a":1}{"b":2}', '\u0000', '{"__proto__":{"x":1}}'), fc.string({ unit: 'binary', maxLength: 30 })),
  }),
  fc.record({ op: fc.constant('dupKey' as const), value: anyJson }),
);

function bodyArb(provider: HeaderProvider): fc.Arbitrary<BodySpec> {
  const model = PROVIDERS[provider];
  const normalType = fc.constantFrom(...model.types);
  // The declared account: absent (the envelope's own), one of the accounts the platform endpoints
  // serve or do not, or an odd value; only for providers that declare one.
  const account = model.accountPath
    ? fc.oneof(w(6, fc.constant(undefined)), w(3, fc.record({ value: fc.constantFrom<Json>(...DECLARED_ACCOUNTS[provider]) })), w(2, fc.record({ value: oddValue })))
    : fc.constant(undefined);
  const normalResource = fc.stringMatching(/^(inv|pi|pay|in)_[A-Za-z0-9]{6,16}$/);
  const clean = fc.record({
    id: normalId,
    type: normalType,
    resourceId: normalResource,
    account,
    overrides: fc.array(fc.record({ path: fc.constant(['extra']), value: fc.jsonValue({ maxDepth: 3 }) }), { maxLength: 1 }),
    deep: fc.constant(null),
    pad: fc.oneof(w(6, fc.constant(0)), w(1, fc.integer({ min: 1, max: 3_000 }))),
    indent: fc.constantFrom(0 as const, 2 as const, '\t' as const),
    raw: fc.oneof(fc.constant([] as RawEdit[]), fc.constant([{ op: 'wrap', before: ' ', after: '\n' }] as RawEdit[])),
  });
  const odd = fc.record(
    {
      id: fc.oneof(w(2, normalId), w(3, oddValue)),
      type: fc.oneof(w(4, normalType), w(1, oddValue)),
      resourceId: fc.oneof(w(3, normalResource), w(1, oddValue)),
      account,
      data: fc.record({ value: anyJson }),
      overrides: fc.array(fc.record({ path: fc.constantFrom(...model.paths), value: anyJson }), { maxLength: 3 }),
      deep: fc.oneof(w(3, fc.constant(null)), w(2, deep)),
      pad: fc.oneof(w(8, fc.constant(0)), w(1, fc.integer({ min: 1, max: 20_000 })), w(1, fc.integer({ min: MAX_BODY - 700, max: MAX_BODY + 300 }))),
      indent: fc.constantFrom(0 as const, 2 as const, '\t' as const),
      raw: fc.oneof(w(5, fc.constant([] as RawEdit[])), w(2, fc.array(rawEdit, { minLength: 1, maxLength: 2 }))),
    },
    { requiredKeys: ['id', 'type', 'resourceId', 'overrides', 'deep', 'pad', 'indent', 'raw'] },
  );
  return fc.oneof(w(5, clean), w(4, odd));
}

// ---------------------------------------------------------------------------------------------
// Signing, headers, mutations

const standardSecret = fc.uint8Array({ minLength: 16, maxLength: 32 }).map((b) => `whsec_${Buffer.from(b).toString('base64')}`);

function signingArb(provider: HeaderProvider): fc.Arbitrary<SigningSpec> {
  const wrongSecret = provider === 'standard' ? standardSecret : fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.constantFrom('whsec_test_stripe_old', 'paymos-secret-new'));
  const timestamp: fc.Arbitrary<Timestamp> = fc.oneof(
    w(12, fc.record({ kind: fc.constant('now' as const), delta: fc.oneof(w(3, fc.constant(0)), w(1, fc.integer({ min: -200, max: 200 }))) })),
    w(1, fc.record({ kind: fc.constant('stale' as const), delta: fc.oneof(fc.integer({ min: 330, max: 100_000_000 }), fc.integer({ min: -100_000_000, max: -330 })) })),
    w(1, fc.constant({ kind: 'ms' as const })),
    w(1, fc.record({ kind: fc.constant('zeros' as const), n: fc.integer({ min: 1, max: 3 }) })),
    w(1, fc.record({ kind: fc.constant('garbage' as const), value: fc.constantFrom('', 'abc', '1.5', '-1', '1e9', '0x10', '+1790000000', 'NaN', '9'.repeat(16)) })),
  );
  return fc.record({
    secret: fc.oneof(w(14, fc.constant('own' as const)), w(1, fc.constant('sibling' as const)), w(1, fc.record({ wrong: wrongSecret }))),
    bogus: fc.oneof(w(4, fc.constant([] as string[])), w(1, fc.array(provider === 'standard' ? standardSecret : fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 2 }))),
    otherScheme: fc.boolean(),
    timestamp,
    tLast: fc.oneof(w(4, fc.constant(false)), w(1, fc.constant(true))),
    scheme: provider === 'standard' ? fc.constantFrom('v1' as const, 'v1a' as const, 'v1 v1a' as const, 'v1a v1' as const) : fc.constant('v1' as const),
    v1aKey: fc.oneof(w(10, fc.constant('own' as const)), w(1, fc.constant('sibling' as const)), w(1, fc.constant('stranger' as const))),
    bogusV1a: provider === 'standard' ? fc.oneof(w(4, fc.constant(0)), w(1, fc.integer({ min: 1, max: 2 }))) : fc.constant(0),
  });
}

const target: fc.Arbitrary<Target> = fc.constantFrom('sig' as const, 'signed' as const, 'any' as const, 'any' as const);

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  // The body after signing: any change is tampering.
  w(2, fc.record({ op: fc.constant('flipBody' as const), pos: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) })),
  w(1, fc.record({ op: fc.constant('truncateBody' as const), cut: fc.integer({ min: 1, max: 40 }) })),
  w(1, fc.record({ op: fc.constant('appendBody' as const), text: fc.constantFrom(' ', '\n', '}', 'x', '\u0000', '\ud800', '{"event_id":"evt_x"}') })),
  w(1, fc.record({ op: fc.constant('growBody' as const), n: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: MAX_BODY - 1_000, max: MAX_BODY + 1_000 })) })),
  w(1, fc.record({ op: fc.constant('insertBody' as const), pos: fc.nat(), bytes: fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x00], [0x20], [0xef, 0xbb, 0xbf]) })),
  w(1, fc.record({ op: fc.constant('reserialize' as const), indent: fc.constantFrom(0 as const, 2 as const) })),
  w(1, fc.record({ op: fc.constant('replaceBody' as const), text: fc.constantFrom('', '{}', '{"event_id":"evt_forged","id":"evt_forged","type":"invoice.paid"}', 'null') })),
  // Headers.
  w(3, fc.record({ op: fc.constant('drop' as const), target, which: fc.nat() })),
  w(3, fc.record({ op: fc.constant('dup' as const), target, which: fc.nat(), other: fc.option(headerString(0, 80), { freq: 2 }) })),
  w(4, fc.record({ op: fc.constant('recase' as const), target, which: fc.nat(), style: fc.constantFrom('upper' as const, 'lower' as const, 'title' as const, 'alternate' as const) })),
  w(2, fc.record({ op: fc.constant('truncateValue' as const), target, which: fc.nat(), cut: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 5, max: 200 })) })),
  w(
    2,
    fc.record({
      op: fc.constant('extendValue' as const),
      target,
      which: fc.nat(),
      how: fc.constantFrom('glued' as const, 'entry' as const),
      n: fc.oneof(w(4, fc.integer({ min: 1, max: 10 })), w(1, fc.integer({ min: 100, max: 20_000 }))),
      ch: fc.constantFrom('a', '0', 'F', 'é', '~', '.'),
    }),
  ),
  w(2, fc.record({ op: fc.constant('replaceValue' as const), target, which: fc.nat(), value: headerString(0, 40) })),
  w(2, fc.record({ op: fc.constant('flipSignature' as const), pos: fc.nat(), pick: fc.nat() })),
  w(1, fc.constant({ op: 'nonCanonical' as const })),
  w(2, fc.record({ op: fc.constant('v1aEdit' as const), how: fc.constantFrom(...V1A_EDITS) })),
  w(1, fc.record({ op: fc.constant('retimestamp' as const), delta: fc.integer({ min: -250, max: 250 }) })),
  w(
    3,
    fc.record({
      op: fc.constant('contentType' as const),
      value: fc.oneof(
        fc.constantFrom(
          null,
          'application/json',
          'application/json; charset=utf-8',
          'APPLICATION/JSON',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=xyz',
          'application/octet-stream',
          'text/xml',
          'application/json; charset=latin1',
          'application/merge-patch+json',
          '%%%',
          '',
          'application/json, text/plain',
          'a'.repeat(2_000),
        ),
        headerString(0, 60),
      ),
      twice: fc.boolean(),
    }),
  ),
  w(1, fc.record({ op: fc.constant('addHeaders' as const), count: fc.integer({ min: 1, max: 40 }), size: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 200, max: 600 })) })),
  w(1, fc.record({ op: fc.constant('shuffle' as const), seed: fc.integer() })),
);

export function endpointArb(provider: FuzzProvider, endpoints: readonly string[]): fc.Arbitrary<EndpointSpec> {
  return fc.oneof(
    w(18, fc.record({ kind: fc.constant('own' as const), index: fc.nat(), query: fc.constant('') })),
    w(1, fc.record({ kind: fc.constant('own' as const), index: fc.nat(), query: fc.constantFrom('?a=b', '?x=%00', '?a[b]=1', '?__proto__=1', '?' + 'q'.repeat(3_000)) })),
    w(1, fc.record({ kind: fc.constant('unknown' as const), id: fc.oneof(fc.constantFrom('nope', provider, 'webhooks', '..', `${endpoints[0]}/extra`, 'x'.repeat(500)), fc.stringMatching(/^zz-[a-z0-9]{1,12}$/)) })),
    w(1, fc.record({ kind: fc.constant('cross' as const), index: fc.nat() })),
    w(1, fc.record({ kind: fc.constant('alias' as const), index: fc.nat(), form: fc.constantFrom('slash' as const, 'upper' as const, 'encoded' as const, 'prefixCase' as const) })),
  );
}

const idHeader: fc.Arbitrary<IdHeader> = fc.oneof(w(3, fc.constant('absent' as const)), w(3, fc.constant('equal' as const)), w(1, fc.record({ other: headerString(0, 40) })));

const webhookId = fc.oneof(
  w(8, normalId),
  w(
    2,
    fc.oneof(
      headerString(0, 60),
      fc.constantFrom('', 'x'.repeat(255), 'x'.repeat(256), 'y'.repeat(8_000), 'msg\t1', 'msg 1', 'é'),
    ).map((s) => s.replace(/^[ \t]+|[ \t]+$/g, '')), // Node trims outer whitespace: the id would not be what was signed
  ),
);

export function caseArb(provider: HeaderProvider): fc.Arbitrary<CaseSpec> {
  const model = PROVIDERS[provider];
  return fc.record({
    provider: fc.constant(provider),
    endpoint: endpointArb(provider, model.endpoints),
    body: bodyArb(provider),
    webhookId,
    signing: signingArb(provider),
    idHeaders: fc.array(idHeader, { minLength: model.idHeaders.length, maxLength: model.idHeaders.length }),
    deliveryId: model.deliveryIdHeader
      ? fc.oneof(w(2, fc.constant(null)), w(3, fc.stringMatching(/^dlv_[a-z0-9]{6,12}$/)), w(1, fc.oneof(headerString(0, 30), fc.constantFrom('x'.repeat(256), 'd\t1'))))
      : fc.constant(null),
    userAgent: fc.oneof(w(3, fc.constant(null)), w(1, fc.constantFrom('Paymos-Webhooks/1.0', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)', 'é'.repeat(50), 'u'.repeat(8_000)))),
    mutations: fc.oneof(w(4, fc.constant([] as Mutation[])), w(5, fc.array(mutation, { minLength: 1, maxLength: 3 }))),
    transport: fc.record({
      chunked: fc.oneof(w(5, fc.constant(false)), w(1, fc.constant(true))),
      sends: fc.oneof(w(6, fc.constant(1 as const)), w(2, fc.constant(2 as const))),
      concurrent: fc.boolean(),
    }),
  });
}
