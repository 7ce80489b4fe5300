import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * An OTLP/HTTP trace receiver on 127.0.0.1, as a collector's `otlp` receiver answers: `POST
 * /v1/traces` in `http/json` (`application/json`) or `http/protobuf` (`application/x-protobuf`),
 * decoded here into one flat list of spans. Every request is recorded, whatever its path, so a test
 * can count what a process sent and where.
 */

/** An attribute value as the SDK set it (an int64 becomes a number). */
export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };

/** One received span, with the resource and scope it came with. Ids are lowercase hex; no parent is ''. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  links: Array<{ traceId: string; spanId: string }>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
  scope: string;
}

/** One request the receiver answered. */
export interface ReceivedRequest {
  method: string;
  path: string;
  contentType: string;
  headers: IncomingHttpHeaders;
  /** When its body had arrived (Date.now()). */
  receivedAt: number;
  spans: ReceivedSpan[];
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export class OtlpReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** Failures to decode a request (the receiver answers 400); a test expects none. */
  readonly errors: string[] = [];
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver!: OtlpReceiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const contentType = String(req.headers['content-type'] ?? '').split(';')[0].trim();
        const record: ReceivedRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          contentType,
          headers: req.headers,
          receivedAt: Date.now(),
          spans: [],
        };
        receiver.requests.push(record);
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        try {
          let body = Buffer.concat(chunks);
          if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
          if (contentType === 'application/json') {
            record.spans = spansOfJson(JSON.parse(body.toString('utf8')));
            res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          } else if (contentType === 'application/x-protobuf') {
            record.spans = spansOfProtobuf(body);
            // An empty ExportTraceServiceResponse.
            res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
          } else {
            throw new Error(`unexpected content-type ${contentType}`);
          }
        } catch (err) {
          receiver.errors.push((err as Error).message);
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, (server.address() as AddressInfo).port);
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every span received so far. */
  spans(): ReceivedSpan[] {
    return this.requests.flatMap((r) => r.spans);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---- OTLP/JSON (ids in hex, as the OTLP/HTTP JSON encoding has them) ----

/* eslint-disable @typescript-eslint/no-explicit-any */
function jsonValue(v: any): AttributeValue {
  if (v == null) return null;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(jsonValue);
  if ('kvlistValue' in v) return jsonAttributes(v.kvlistValue.values);
  if ('bytesValue' in v) return v.bytesValue;
  return null;
}

function jsonAttributes(list: any[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

function spansOfJson(body: any): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs: any) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map(
        (s: any): ReceivedSpan => ({
          traceId: s.traceId ?? '',
          spanId: s.spanId ?? '',
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind ?? 0,
          attributes: jsonAttributes(s.attributes),
          links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
          statusCode: s.status?.code ?? 0,
          resource,
          scope: ss.scope?.name ?? '',
        }),
      ),
    );
  });
}
/* eslint-enable @typescript-eslint/no-explicit-any */

// ---- OTLP/protobuf: the wire format, read by field number (opentelemetry/proto/trace/v1) ----

type Field = { no: number; varint?: bigint; bytes?: Buffer; fixed?: Buffer };

/** The fields of one message, in order. */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, varint: varint() });
    else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      out.push({ no, fixed: buf.subarray(pos, pos + n) });
      pos += n;
    } else if (wire === 2) {
      const n = Number(varint());
      if (pos + n > buf.length) throw new Error('truncated field');
      out.push({ no, bytes: buf.subarray(pos, pos + n) });
      pos += n;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const all = (fs: Field[], no: number): Field[] => fs.filter((f) => f.no === no);
const one = (fs: Field[], no: number): Field | undefined => fs.find((f) => f.no === no);
const str = (f: Field | undefined): string => (f?.bytes ? f.bytes.toString('utf8') : '');
const hex = (f: Field | undefined): string => (f?.bytes ? f.bytes.toString('hex') : '');

/** AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array, 6 kvlist, 7 bytes. */
function protoValue(buf: Buffer): AttributeValue {
  const [f] = fields(buf);
  if (!f) return null;
  switch (f.no) {
    case 1:
      return str(f);
    case 2:
      return f.varint !== 0n;
    case 3:
      return Number(BigInt.asIntN(64, f.varint!));
    case 4:
      return f.fixed!.readDoubleLE(0);
    case 5:
      return all(fields(f.bytes!), 1).map((v) => protoValue(v.bytes!));
    case 6:
      return protoAttributes(all(fields(f.bytes!), 1));
    case 7:
      return f.bytes!.toString('base64');
    default:
      return null;
  }
}

/** KeyValue: 1 key, 2 value. */
function protoAttributes(list: Field[]): Record<string, AttributeValue> {
  return Object.fromEntries(
    list.map((kv) => {
      const fs = fields(kv.bytes!);
      const v = one(fs, 2);
      return [str(one(fs, 1)), v?.bytes ? protoValue(v.bytes) : null];
    }),
  );
}

/**
 * ExportTraceServiceRequest: 1 ResourceSpans (1 Resource {1 attributes}, 2 ScopeSpans (1 scope
 * {1 name}, 2 Span)). Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 9 attributes,
 * 13 links (1 trace_id, 2 span_id), 15 status (3 code).
 */
function spansOfProtobuf(body: Buffer): ReceivedSpan[] {
  return all(fields(body), 1).flatMap((rsField) => {
    const rs = fields(rsField.bytes!);
    const resourceField = one(rs, 1);
    const resource = resourceField ? protoAttributes(all(fields(resourceField.bytes!), 1)) : {};
    return all(rs, 2).flatMap((ssField) => {
      const ss = fields(ssField.bytes!);
      const scopeField = one(ss, 1);
      const scope = scopeField ? str(one(fields(scopeField.bytes!), 1)) : '';
      return all(ss, 2).map((spanField): ReceivedSpan => {
        const s = fields(spanField.bytes!);
        const status = one(s, 15);
        return {
          traceId: hex(one(s, 1)),
          spanId: hex(one(s, 2)),
          parentSpanId: hex(one(s, 4)),
          name: str(one(s, 5)),
          kind: Number(one(s, 6)?.varint ?? 0n),
          attributes: protoAttributes(all(s, 9)),
          links: all(s, 13).map((l) => {
            const lf = fields(l.bytes!);
            return { traceId: hex(one(lf, 1)), spanId: hex(one(lf, 2)) };
          }),
          statusCode: status ? Number(one(fields(status.bytes!), 3)?.varint ?? 0n) : 0,
          resource,
          scope,
        };
      });
    });
  });
}
