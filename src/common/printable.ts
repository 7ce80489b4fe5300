/**
 * What an id must be to be stored, keyed on and shown as itself: printable text. Control and format
 * characters (Unicode Cc and Cf: C0 and C1 controls, zero-width and bidirectional formatting
 * characters), line and paragraph separators (U+2028, U+2029) and lone surrogates (in a `u` regex a
 * well-formed pair is one code point, a lone half is `Cs`) make a row read as something else in an
 * archive or a terminal, or cannot be stored at all (PostgreSQL refuses NUL; a lone surrogate
 * becomes U+FFFD, so two ids would share one key).
 */
export const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;

/** The longest id kept (event ids, types, resource and account ids, shipment ids). */
export const ID_MAX_LENGTH = 255;

/** Whether `value` is an id that can be stored and shown as itself: 1–`maxLength` printable characters. */
export function isPrintableId(value: unknown, maxLength: number = ID_MAX_LENGTH): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= maxLength && !UNPRINTABLE.test(value);
}

const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'gu');

/**
 * `value` as a log or message can show it: each unprintable character written as its `\uXXXX`
 * (or `\u{XXXXX}`) escape, cut to `maxLength` code points. For naming a refused id, never for
 * storing one.
 */
export function showUnprintable(value: string, maxLength = 80): string {
  const shown = value.replace(UNPRINTABLE_ALL, (c) => {
    const code = c.codePointAt(0)!;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
  // By code points, so the cut never leaves half of a surrogate pair.
  const points = Array.from(shown);
  return points.length > maxLength ? `${points.slice(0, maxLength).join('')}…` : shown;
}
