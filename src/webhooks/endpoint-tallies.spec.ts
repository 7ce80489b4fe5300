import { countOf, EndpointTallies } from './endpoint-tallies';

const HOUR = 3_600_000;
const T = Date.UTC(2026, 11, 1, 10, 0, 0);

describe('countOf', () => {
  it.each([
    ['accepted', 200, 'accepted'],
    ['duplicate', 200, 'duplicate'],
    ['invalid_signature', 401, 'refused'],
    ['missing_signature', 401, 'refused'],
    ['timestamp_out_of_tolerance', 401, 'refused'],
    ['malformed_payload', 400, 'refused'],
    ['payload_too_large', 413, 'refused'],
    ['rate_limited', 429, 'refused'],
    ['unavailable', 503, null],
    ['http_500', 500, null],
  ] as const)('%s (%d) counts as %s', (answer, status, count) => {
    expect(countOf(answer, status)).toBe(count);
  });
});

describe('EndpointTallies', () => {
  it('counts per endpoint and hour, and keeps the latest instants', () => {
    const tallies = new EndpointTallies();
    tallies.delivered('a', 'accepted', T + 5);
    tallies.delivered('a', 'duplicate', T + 1);
    tallies.delivered('a', 'refused', T + 9);
    tallies.delivered('a', 'accepted', T + HOUR + 1);
    tallies.delivered('a', null, T + HOUR + 2);
    tallies.delivered('b', 'refused', T);
    tallies.secretMatched('a', 1, T + 7);
    tallies.secretMatched('a', 1, T + 3);
    tallies.secretMatched('a', 0, T + 2);

    const [a, b] = tallies.take();
    expect(a).toEqual({
      endpointId: 'a',
      lastDeliveryAt: T + HOUR + 2,
      lastAuthenticAt: T + HOUR + 1,
      secretsMatched: new Map([
        [1, T + 7],
        [0, T + 2],
      ]),
      hours: new Map([
        [T, { accepted: 1, duplicate: 1, refused: 1 }],
        [T + HOUR, { accepted: 1, duplicate: 0, refused: 0 }],
      ]),
    });
    // A refusal is a delivery, never an authentic one.
    expect(b).toEqual({ endpointId: 'b', lastDeliveryAt: T, lastAuthenticAt: null, secretsMatched: new Map(), hours: new Map([[T, { accepted: 0, duplicate: 0, refused: 1 }]]) });
    expect(tallies.isEmpty).toBe(true);
    expect(tallies.take()).toEqual([]);
  });

  it('adds back what a flush could not write to what came since', () => {
    const tallies = new EndpointTallies();
    tallies.delivered('a', 'accepted', T + 10);
    tallies.secretMatched('a', 0, T + 10);
    const failed = tallies.take();
    tallies.delivered('a', 'accepted', T + 5);
    tallies.delivered('a', 'refused', T + 20);
    tallies.secretMatched('a', 0, T + 4);
    tallies.putBack(failed);

    expect(tallies.take()).toEqual([
      {
        endpointId: 'a',
        lastDeliveryAt: T + 20,
        lastAuthenticAt: T + 10,
        secretsMatched: new Map([[0, T + 10]]),
        hours: new Map([[T, { accepted: 2, duplicate: 0, refused: 1 }]]),
      },
    ]);
  });
});
