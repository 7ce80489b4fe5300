import { capJsonDepth, exceedsJsonDepth, MAX_JSON_DEPTH, TOO_DEEP_MARKER } from './json-depth';

const nest = (levels: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

describe('JSON nesting depth', () => {
  it('counts the top-level object or array as level 1; scalars have none', () => {
    expect(exceedsJsonDepth(1, 0)).toBe(false);
    expect(exceedsJsonDepth({}, 1)).toBe(false);
    expect(exceedsJsonDepth({ a: {} }, 1)).toBe(true);
    expect(exceedsJsonDepth(nest(MAX_JSON_DEPTH))).toBe(false);
    expect(exceedsJsonDepth(nest(MAX_JSON_DEPTH + 1))).toBe(true);
  });

  it('asks about 1,000,000 levels without exhausting the stack', () => {
    expect(exceedsJsonDepth(nest(1_000_000))).toBe(true);
    const capped = capJsonDepth(nest(1_000_000));
    expect(() => JSON.stringify(capped)).not.toThrow();
    expect(JSON.stringify(capped)).toBe('['.repeat(64) + JSON.stringify(TOO_DEEP_MARKER) + ']'.repeat(64));
  });

  it('leaves a value within the limit as it is (the same object), and a cycle terminates', () => {
    const value = { a: [1, { b: new Date(0) }] };
    expect(capJsonDepth(value)).toBe(value);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => JSON.stringify(capJsonDepth(cycle))).not.toThrow();
  });
});
