import { AddressInfo, createServer, Server, Socket, connect } from 'node:net';

/**
 * A TCP proxy a test can break: `down()` drops every connection and refuses new ones (a server
 * that went away), `up()` brings it back on the same port. Mocks nothing: behind it is the real
 * PostgreSQL or Redis.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** While set, new connections are accepted and never answered (a server that hangs). */
  private hanging = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async up(): Promise<void> {
    this.hanging = false;
    if (this.server) return;
    const server = createServer((client) => {
      if (this.hanging) {
        this.sockets.add(client);
        client.on('error', () => client.destroy());
        return;
      }
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Drops the open connections; new ones are accepted and never answered until `up()`. */
  hang(): void {
    this.hanging = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async down(): Promise<void> {
    this.hanging = false;
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }
}
