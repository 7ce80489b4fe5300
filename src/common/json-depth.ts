/**
 * The deepest a JSON value may nest, in a webhook body or an API request body: the top-level
 * object or array is level 1. Real envelopes nest well under 16 (a Stripe event about 8); the
 * limit keeps every recursive reader (class-transformer, JSON.stringify of an answer, the
 * archive's detail) far from the stack's end. A webhook body nested deeper answers `400 malformed_payload`.
 */
export const MAX_JSON_DEPTH = 64;

export const TOO_DEEP_DETAIL = `the body nests deeper than ${MAX_JSON_DEPTH} levels`;

/** Whether `value` nests objects or arrays deeper than `max` levels. Iterative: any depth is safe to ask about. */
export function exceedsJsonDepth(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** What stands, in an answer, for a part nested deeper than the limit. */
export const TOO_DEEP_MARKER = `[nested deeper than ${MAX_JSON_DEPTH} levels]`;

/**
 * `value` with every object or array below level `max` replaced by TOO_DEEP_MARKER: what an
 * answer can serialise without exhausting the stack. Iterative; copies only when needed.
 */
export function capJsonDepth(value: unknown, max = MAX_JSON_DEPTH): unknown {
  if (!exceedsJsonDepth(value, max)) return value;
  const root: { v: unknown } = { v: undefined };
  const stack: Array<{ source: unknown; depth: number; assign: (v: unknown) => void }> = [
    { source: value, depth: 1, assign: (v) => (root.v = v) },
  ];
  while (stack.length > 0) {
    const { source, depth, assign } = stack.pop()!;
    if (source === null || typeof source !== 'object') {
      assign(source);
    } else if (depth > max) {
      assign(TOO_DEEP_MARKER);
    } else if (Array.isArray(source)) {
      const copy: unknown[] = new Array(source.length);
      assign(copy);
      source.forEach((child, i) => stack.push({ source: child, depth: depth + 1, assign: (v) => (copy[i] = v) }));
    } else {
      // A plain copy of the JSON view (toJSON first, as JSON.stringify would), without prototype.
      const json = typeof (source as { toJSON?: unknown }).toJSON === 'function' ? (source as { toJSON(): unknown }).toJSON() : source;
      if (json === null || typeof json !== 'object') {
        assign(json);
        continue;
      }
      const copy: Record<string, unknown> = Object.create(null);
      assign(copy);
      for (const [key, child] of Object.entries(json)) stack.push({ source: child, depth: depth + 1, assign: (v) => (copy[key] = v) });
    }
  }
  return root.v;
}
