/**
 * Reading an answer from outside (a carrier, an event sink) without letting it decide how much
 * memory this process spends on it. At most `limit` bytes are kept; an answer that declares or
 * sends more is refused: the rest is not read (the stream is cancelled, which closes the
 * connection) and the caller sees an unreadable body. What a carrier has to say fits in a few
 * hundred bytes (`{"id":"shp_…"}`, `{"error":"invalid_address"}`).
 */

/**
 * The most bytes of an outside answer ever read: 64 KiB, where a carrier's answer
 * (docs/carriers.md#the-carrier-contract) takes a few hundred.
 */
export const ANSWER_READ_LIMIT_BYTES = 65_536;

export interface BoundedAnswer {
  /** The body as UTF-8 text, or null when it could not be read in full within the bound. */
  text: string | null;
  /** Bytes taken off the wire (never more than the limit plus one chunk). */
  bytesRead: number;
  /** Why `text` is null: over the bound, or the read failed (a reset, the call's timeout). */
  unreadable?: 'too_large' | 'read_failed';
}

/** Something with a web body: a fetch `Response`. */
interface HasBody {
  readonly body: ReadableStream<Uint8Array> | null;
  readonly headers: { get(name: string): string | null };
}

export async function readBoundedAnswer(response: HasBody, limit = ANSWER_READ_LIMIT_BYTES): Promise<BoundedAnswer> {
  const body = response.body;
  if (!body) return { text: '', bytesRead: 0 };
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    await body.cancel().catch(() => undefined);
    return { text: null, bytesRead: 0, unreadable: 'too_large' };
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let bytesRead = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytesRead += value.byteLength;
      if (bytesRead > limit) {
        // Nothing past the bound is kept, or read: cancelling aborts the transfer.
        chunks.length = 0;
        await reader.cancel().catch(() => undefined);
        return { text: null, bytesRead, unreadable: 'too_large' };
      }
      chunks.push(value);
    }
  } catch {
    await reader.cancel().catch(() => undefined);
    return { text: null, bytesRead, unreadable: 'read_failed' };
  } finally {
    reader.releaseLock();
  }
  return { text: Buffer.concat(chunks, bytesRead).toString('utf8'), bytesRead };
}

/** Refuses an answer's body unread (a sink's answer is not needed): the connection is not kept for it. */
export async function discardAnswer(response: { readonly body: ReadableStream<Uint8Array> | null }): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}

/** An answer longer than its bound: not read past it. */
export class AnswerTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the answer exceeded ${limit / (1024 * 1024)} MiB and was not read further`);
  }
}

/**
 * `fetch` for a client that reads answers itself (stripe-node reads the whole `text()`): the body
 * of every answer is cut at `limit` bytes in the stream that client reads; past it the stream errors
 * with AnswerTooLarge, which cancels the download.
 */
export function boundedFetch(limit: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    let bytesSoFar = 0;
    const bounded = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytesSoFar += chunk.byteLength;
          if (bytesSoFar > limit) controller.error(new AnswerTooLarge(limit));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(bounded, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
