/**
 * A carrier speaking the module's carrier API (docs/carriers.md) from the carrier's side, for the demo and the tests.
 *
 *   npm run carrier:sim -- [--port 4010] [--host 127.0.0.1] [--api-key KEY]
 *
 * `POST /shipments` honours `Idempotency-Key`: the same key with the same body answers the first
 * shipment (200), the same key with another body 409, a new key creates one (201). Every call is
 * recorded. Faults, switched over HTTP, apply to the next N calls:
 *
 *   POST /_sim/faults {"mode":"fail","count":3}    answer 500 without creating anything
 *   POST /_sim/faults {"mode":"hang","count":1}    create the shipment, then never answer
 *   POST /_sim/faults {"mode":"drop","count":1}    create the shipment, then close the connection unanswered
 *   POST /_sim/faults {"mode":"reject","count":1}  answer 400 invalid_address
 *   GET  /_sim/calls, GET /_sim/shipments, POST /_sim/reset
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { canonicalJson } from '../src/common/canonical-json';

export type FaultMode = 'fail' | 'hang' | 'drop' | 'reject';

/**
 * An answer of the test's choosing, played after the shipment is created (a carrier that shipped
 * and then answered oddly): `body` as is, or `streamBytes` bytes of a JSON-looking body streamed in
 * 64 KiB chunks (an oversized answer; `bytesWritten` tells how much the client let through before
 * it hung up).
 */
export interface CustomAnswer {
  status: number;
  body?: string;
  streamBytes?: number;
  headers?: Record<string, string>;
}

export interface SimulatedShipment {
  id: string;
  idempotencyKey: string;
  orderId: string | null;
  createdAt: string;
}

export interface RecordedCall {
  at: string;
  idempotencyKey: string | null;
  /** The W3C `traceparent` the call carried (a traced sender's), or null. */
  traceparent: string | null;
  /** What the simulator did: created, replayed, conflict, or the fault it played. */
  result: 'created' | 'replayed' | 'conflict' | 'unauthorized' | 'bad_request' | 'answer' | FaultMode;
}

export class CarrierSimulator {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly byKey = new Map<string, { shipment: SimulatedShipment; bodyHash: string }>();
  readonly calls: RecordedCall[] = [];
  private faults: Array<FaultMode | CustomAnswer> = [];
  /** Bytes of streamed custom answers written to the socket, and whether the client hung up first. */
  readonly streamed: Array<{ bytesWritten: number; closedEarly: boolean }> = [];

  /** Called with each new shipment as it is created (the benchmark times shipments with it). */
  onShipment: ((shipment: SimulatedShipment) => void) | undefined;

  constructor(private readonly options: { apiKey?: string } = {}) {}

  get shipments(): SimulatedShipment[] {
    return [...this.byKey.values()].map((v) => v.shipment);
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Queues `count` calls to misbehave as `mode`, after the faults already queued. */
  fault(mode: FaultMode, count = 1): void {
    for (let i = 0; i < count; i++) this.faults.push(mode);
  }

  /** Queues `count` calls to be answered with `answer` (after the shipment is created). */
  answerWith(answer: CustomAnswer, count = 1): void {
    for (let i = 0; i < count; i++) this.faults.push(answer);
  }

  reset(): void {
    this.byKey.clear();
    this.calls.length = 0;
    this.faults = [];
    this.streamed.length = 0;
  }

  async start(port = 0, host = '127.0.0.1'): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = (req.url ?? '/').split('?')[0];
    if (path.startsWith('/_sim/')) return this.control(req.method ?? 'GET', path, body, res);
    if (req.method !== 'POST' || path !== '/shipments') return json(res, 404, { error: 'not_found' });

    const key = header(req, 'idempotency-key');
    const traceparent = header(req, 'traceparent');
    const record = (result: RecordedCall['result']) => this.calls.push({ at: new Date().toISOString(), idempotencyKey: key, traceparent, result });
    if (this.options.apiKey && header(req, 'authorization') !== `Bearer ${this.options.apiKey}`) {
      record('unauthorized');
      return json(res, 401, { error: 'unauthorized' });
    }
    let parsed: { orderId?: unknown };
    try {
      parsed = JSON.parse(body);
    } catch {
      record('bad_request');
      return json(res, 400, { error: 'invalid_json' });
    }
    if (!key) {
      record('bad_request');
      return json(res, 400, { error: 'missing_idempotency_key' });
    }

    const fault = this.faults.shift();
    if (fault === 'fail') {
      record('fail');
      return json(res, 500, { error: 'simulated_failure' });
    }
    if (fault === 'reject') {
      record('reject');
      return json(res, 400, { error: 'invalid_address' });
    }

    const bodyHash = createHash('sha256').update(canonicalJson(parsed)).digest('hex');
    const existing = this.byKey.get(key);
    let status: number;
    let shipment: SimulatedShipment;
    if (existing) {
      if (existing.bodyHash !== bodyHash) {
        record('conflict');
        return json(res, 409, { error: 'idempotency_key_reused' });
      }
      status = 200;
      shipment = existing.shipment;
    } else {
      status = 201;
      shipment = {
        id: `shp_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
        idempotencyKey: key,
        orderId: typeof parsed.orderId === 'string' ? parsed.orderId : null,
        createdAt: new Date().toISOString(),
      };
      this.byKey.set(key, { shipment, bodyHash });
      this.onShipment?.(shipment);
    }

    if (fault === 'hang') {
      record('hang'); // the work is done; the answer never comes
      return;
    }
    if (fault === 'drop') {
      record('drop');
      req.socket.destroy();
      return;
    }
    if (fault !== undefined && typeof fault === 'object') {
      record('answer');
      return this.custom(res, fault);
    }
    record(status === 201 ? 'created' : 'replayed');
    json(res, status, { id: shipment.id, orderId: shipment.orderId, status: 'created' });
  }

  private custom(res: ServerResponse, answer: CustomAnswer): void {
    if (answer.streamBytes === undefined) {
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
      return;
    }
    const total = answer.streamBytes;
    const entry = { bytesWritten: 0, closedEarly: false };
    this.streamed.push(entry);
    res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': String(total), ...answer.headers });
    const head = Buffer.from('{"id":"shp_big","pad":"');
    const chunk = Buffer.alloc(65_536, 'a');
    let closed = false;
    res.on('close', () => {
      closed = true;
      entry.closedEarly = entry.bytesWritten < total;
    });
    const pump = () => {
      while (!closed && entry.bytesWritten < total) {
        const left = total - entry.bytesWritten;
        const piece = entry.bytesWritten === 0 ? head.subarray(0, Math.min(head.length, left)) : chunk.subarray(0, Math.min(chunk.length, left));
        entry.bytesWritten += piece.length;
        if (entry.bytesWritten >= total) {
          res.end(piece);
          return;
        }
        if (!res.write(piece)) {
          res.once('drain', pump);
          return;
        }
      }
    };
    pump();
  }

  private control(method: string, path: string, body: string, res: ServerResponse): void {
    if (method === 'GET' && path === '/_sim/calls') return json(res, 200, this.calls);
    if (method === 'GET' && path === '/_sim/shipments') return json(res, 200, this.shipments);
    if (method === 'POST' && path === '/_sim/reset') {
      this.reset();
      return json(res, 200, { ok: true });
    }
    if (method === 'POST' && path === '/_sim/faults') {
      const { mode, count } = safeJson(body) as { mode?: unknown; count?: unknown };
      if (!['fail', 'hang', 'drop', 'reject'].includes(String(mode)) || (count !== undefined && !Number.isInteger(count))) {
        return json(res, 400, { error: 'mode must be fail, hang, drop or reject; count an integer' });
      }
      this.fault(mode as FaultMode, (count as number | undefined) ?? 1);
      return json(res, 200, { queued: this.faults });
    }
    json(res, 404, { error: 'not_found' });
  }
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function safeJson(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: process.env.CARRIER_SIM_PORT ?? '4010' },
      host: { type: 'string', default: '127.0.0.1' },
      'api-key': { type: 'string' },
    },
  });
  void new CarrierSimulator({ apiKey: values['api-key'] }).start(Number(values.port), values.host).then((sim) => {
    console.log(`carrier simulator listening on ${sim.url} (POST /shipments; faults: POST /_sim/faults)`);
  });
}
