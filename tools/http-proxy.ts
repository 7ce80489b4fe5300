import { createServer, request, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

export interface HttpProxyOptions {
  /** Parse JSON request bodies and serialise them again (compact), as a body-parsing gateway does. */
  reserialise?: boolean;
  /** Answer `503 {"error":"unavailable"}` itself to every request for this long after the first one. */
  unavailableForMs?: number;
  /** Answer `200 {"ok":true}` itself to webhook deliveries, forwarding nothing (a proxy that acknowledges for the service). */
  acknowledgeWebhooks?: boolean;
}

/**
 * An HTTP proxy put between a sender and the real service, to play what a deployment can get
 * wrong: a gateway that re-serialises JSON, a service that is unavailable for a while, a proxy that
 * answers for the service. Mocks nothing behind it. The e2e tests start it in process; run alone
 * (`node dist/tools/http-proxy.js --target 3000 --port 3001 --reserialise`) it shows what
 * `payment-webhooks conformance` prints through such a deployment.
 */
export class HttpProxy {
  private server: Server | undefined;
  private firstRequestAt: number | undefined;
  port = 0;
  /** Requests answered 503 by the proxy itself. */
  unavailableAnswers = 0;
  /** Requests passed to the service. */
  forwarded = 0;
  /** Bodies changed by re-serialising. */
  rewritten = 0;

  constructor(
    private readonly targetPort: number,
    private readonly options: HttpProxyOptions = {},
    private readonly targetHost = '127.0.0.1',
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body = Buffer.concat(chunks);
    const now = Date.now();
    this.firstRequestAt ??= now;
    if (this.options.unavailableForMs !== undefined && now - this.firstRequestAt < this.options.unavailableForMs) {
      this.unavailableAnswers += 1;
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable"}');
      return;
    }
    if (this.options.acknowledgeWebhooks && req.url?.includes('/webhooks/')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      return;
    }
    const headers = { ...req.headers };
    if (this.options.reserialise && body.length > 0 && String(headers['content-type'] ?? '').includes('json')) {
      try {
        const again = Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8'))));
        if (!again.equals(body)) this.rewritten += 1;
        body = again;
        headers['content-length'] = String(body.length);
      } catch {
        // not JSON: passed as it came
      }
    }
    this.forwarded += 1;
    const upstream = request({ host: this.targetHost, port: this.targetPort, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end('{"error":"bad_gateway"}');
      else res.destroy();
    });
    upstream.end(body);
  }
}

const USAGE = `usage: node dist/tools/http-proxy.js [--target [host:]port] [--port port] [--reserialise] [--unavailable-for-ms N] [--acknowledge-webhooks]
  A proxy in front of the service that plays what a deployment can get wrong (run from a clone, after npm run build):
  --target [host:]port       the service (default 127.0.0.1:3000)
  --port port                where the proxy listens, on 127.0.0.1 (default 3001)
  --reserialise              parse JSON request bodies and serialise them again, compact (a body-mapping gateway)
  --unavailable-for-ms N     answer 503 itself for N ms, counted from the first request it receives (a restart)
  --acknowledge-webhooks     answer 200 {"ok":true} to every /webhooks/ request itself, forwarding nothing`;

if (require.main === module) {
  let values;
  try {
    values = parseArgs({
      options: {
        target: { type: 'string', default: '3000' },
        port: { type: 'string', default: '3001' },
        reserialise: { type: 'boolean', default: false },
        'unavailable-for-ms': { type: 'string' },
        'acknowledge-webhooks': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (err) {
    console.error(`http-proxy: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const match = /^(?:([^:]+):)?(\d{1,5})$/.exec(values.target);
  const port = Number(values.port);
  const unavailable = values['unavailable-for-ms'] === undefined ? undefined : Number(values['unavailable-for-ms']);
  if (!match || !Number.isInteger(port) || (unavailable !== undefined && !(unavailable >= 0))) {
    console.error(`http-proxy: --target is [host:]port, --port a port, --unavailable-for-ms a number of ms\n${USAGE}`);
    process.exit(2);
  }
  const proxy = new HttpProxy(Number(match[2]), {
    reserialise: values.reserialise,
    unavailableForMs: unavailable,
    acknowledgeWebhooks: values['acknowledge-webhooks'],
  }, match[1] ?? '127.0.0.1');
  void proxy.start(port).then(() => {
    const modes = [
      values.reserialise && 're-serialising JSON bodies',
      unavailable !== undefined && `answering 503 for ${unavailable} ms from the first request`,
      values['acknowledge-webhooks'] && 'answering webhooks itself',
    ]
      .filter(Boolean)
      .join(', ');
    console.log(`http proxy on ${proxy.url} → ${match[1] ?? '127.0.0.1'}:${match[2]}${modes ? ` (${modes})` : ''}`);
  });
}
