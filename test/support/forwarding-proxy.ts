import { createServer, IncomingHttpHeaders, request, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Headers of one hop only: never passed on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

/**
 * A reverse proxy as nginx with `proxy_add_x_forwarded_for` is one: each request goes to the
 * service on a connection of its own from `fromAddress`, with the client's socket address appended
 * to its `X-Forwarded-For`. It streams both ways, unbuffered (nginx `proxy_request_buffering off`),
 * so that a body that trickles in reaches the service as slowly.
 */
export class ForwardingProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetPort: number,
    private readonly fromAddress: string,
  ) {
    this.server = createServer((req, res) => {
      const client = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
      const forwarded = req.headers['x-forwarded-for'];
      const upstream = request({
        host: '127.0.0.1',
        port: this.targetPort,
        localAddress: this.fromAddress,
        agent: false,
        method: req.method,
        path: req.url,
        headers: { ...forwardable(req.headers), 'x-forwarded-for': forwarded ? `${forwarded}, ${client}` : client },
      });
      upstream.on('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        answer.pipe(res);
      });
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      // The client gone (or answered): its upstream request goes too.
      res.on('close', () => upstream.destroy());
      req.pipe(upstream);
    });
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
