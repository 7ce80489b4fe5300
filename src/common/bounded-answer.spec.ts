import { ANSWER_READ_LIMIT_BYTES, readBoundedAnswer } from './bounded-answer';

/**
 * The bound on reading an outside answer (docs/design.md#what-an-outsider-can-make-the-process-hold),
 * on the logic itself: an endless body is pulled only up to the bound plus one chunk, then
 * cancelled; nothing past it is kept.
 */

/** An endless (or `total`-byte) body of `chunk`-byte pieces, counting what was pulled and whether it was cancelled. */
function body(chunk: number, total = Infinity, headers: Record<string, string> = {}) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const size = Math.min(chunk, total - seen.pulled);
        if (size <= 0) return controller.close();
        seen.pulled += size;
        controller.enqueue(new Uint8Array(size).fill(0x61));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    // No read-ahead: what is pulled is what the reader asked for.
    { highWaterMark: 0 },
  );
  const map = new Map(Object.entries(headers));
  return { seen, response: { body: stream, headers: { get: (name: string) => map.get(name) ?? null } } };
}

describe('readBoundedAnswer', () => {
  it('is 64 KiB by default', () => {
    expect(ANSWER_READ_LIMIT_BYTES).toBe(65_536);
  });

  it('an endless body: read up to the bound plus one chunk, then cancelled, text null', async () => {
    const { seen, response } = body(16_384);
    const answer = await readBoundedAnswer(response);
    expect(answer).toEqual({ text: null, bytesRead: ANSWER_READ_LIMIT_BYTES + 16_384, unreadable: 'too_large' });
    expect(seen).toEqual({ pulled: ANSWER_READ_LIMIT_BYTES + 16_384, cancelled: true });
  });

  it('20 MiB declared in content-length: not read at all', async () => {
    const { seen, response } = body(16_384, 20 * 1024 * 1024, { 'content-length': String(20 * 1024 * 1024) });
    expect(await readBoundedAnswer(response)).toEqual({ text: null, bytesRead: 0, unreadable: 'too_large' });
    expect(seen).toEqual({ pulled: 0, cancelled: true });
  });

  it('exactly the bound is read in full', async () => {
    const { seen, response } = body(1_000, ANSWER_READ_LIMIT_BYTES);
    const answer = await readBoundedAnswer(response);
    expect(answer.bytesRead).toBe(ANSWER_READ_LIMIT_BYTES);
    expect(answer.text?.length).toBe(ANSWER_READ_LIMIT_BYTES);
    expect(/^a+$/.test(answer.text ?? '')).toBe(true);
    expect(seen.cancelled).toBe(false);
  });

  it('one byte over the bound is refused', async () => {
    const { response } = body(1_000, ANSWER_READ_LIMIT_BYTES + 1);
    expect((await readBoundedAnswer(response, ANSWER_READ_LIMIT_BYTES)).unreadable).toBe('too_large');
  });

  it('a smaller bound is honoured', async () => {
    const { seen, response } = body(10);
    expect(await readBoundedAnswer(response, 25)).toEqual({ text: null, bytesRead: 30, unreadable: 'too_large' });
    expect(seen.pulled).toBe(30);
  });

  it('a body that fails mid-read is unreadable, not an error', async () => {
    let n = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (n++ === 0) controller.enqueue(new Uint8Array([0x7b]));
        else controller.error(new Error('socket reset'));
      },
    });
    expect(await readBoundedAnswer({ body: stream, headers: { get: () => null } })).toEqual({ text: null, bytesRead: 1, unreadable: 'read_failed' });
  });

  it('no body is an empty text', async () => {
    expect(await readBoundedAnswer({ body: null, headers: { get: () => null } })).toEqual({ text: '', bytesRead: 0 });
  });
});
