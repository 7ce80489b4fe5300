import { IncomingMessage, request } from 'node:http';
import type { HeaderLine } from './model';

export interface Answer {
  /** HTTP status; 0 when the connection failed before an answer, -1 when none came in time. */
  status: number;
  /** The parsed JSON answer, or the raw text when it is not JSON. */
  body: unknown;
  /** The answer's Content-Type. */
  contentType?: string;
  error?: string;
}

/**
 * One POST with exactly these header lines (names in their case, repeated lines kept, in order)
 * and these bytes, on a connection of its own: what supertest cannot send (repeated headers,
 * header order, a body that is not text).
 */
export function post(port: number, path: string, headers: HeaderLine[], body: Buffer, chunked: boolean, timeoutMs = 10_000, localAddress?: string): Promise<Answer> {
  const raw: string[] = ['Host', `127.0.0.1:${port}`];
  for (const [k, v] of headers) raw.push(k, v);
  if (chunked) raw.push('Transfer-Encoding', 'chunked');
  else raw.push('Content-Length', String(body.length));
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Answer) => {
      if (!settled) {
        settled = true;
        resolve(a);
      }
    };
    const req = request({ host: '127.0.0.1', port, localAddress, method: 'POST', path, headers: raw as unknown as Record<string, string>, agent: false, setHost: false }, (res) => {
      readAnswer(res, finish);
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, body: null, error: err.message }));
    });
    req.setTimeout(timeoutMs, () => {
      finish({ status: -1, body: null, error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    });
    req.on('error', (err) => finish({ status: 0, body: null, error: err.message }));
    if (chunked && body.length > 0) {
      // Two chunks, so a chunked body really is one.
      const half = Math.floor(body.length / 2);
      req.write(body.subarray(0, half));
      req.end(body.subarray(half));
    } else req.end(body);
  });
}

export function get(port: number, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method: 'GET', path, headers, agent: false }, (res) => readAnswer(res, resolve));
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10000 ms')));
    req.on('error', (err) => resolve({ status: 0, body: null, error: err.message }));
    req.end();
  });
}

/** The answer's status and body: its JSON, or the raw text when it is not JSON (Node's own 431 or 400). */
function readAnswer(res: IncomingMessage, done: (answer: Answer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    done({ status: res.statusCode ?? 0, body: parsed, contentType: res.headers['content-type'] });
  });
}
