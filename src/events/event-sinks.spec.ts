import { createServer, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { PaymentWebhooksEvent } from '../common/host-events';
import type { ResolvedOptions } from '../config/options';
import { MetricsService } from '../observability/metrics.service';
import { EventSinks } from './event-sinks';

/**
 * An HTTP sink's answer is never read: a sink answering 200 with an endless
 * body gets its delivery done, and the connection is closed after the first bytes, not drained.
 */
describe('EventSinks: the answer of a sink is not read', () => {
  let server: Server;
  let url: string;
  const sockets = new Set<Socket>();
  let written = 0;
  let closed!: Promise<void>;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      let onClose!: () => void;
      closed = new Promise((r) => (onClose = r));
      res.on('close', onClose);
      res.writeHead(Number(req.url?.slice(1)) || 200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(65_536, 0x61);
      // Endless: only the client hanging up ends it.
      const pump = () => {
        while (!res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  const event = { id: '01900000-0000-7000-8000-000000000001', type: 'order.paid', occurredAt: new Date().toISOString(), data: {} } as unknown as PaymentWebhooksEvent;

  function sinksTo(path: string): EventSinks {
    const options = {
      eventSinks: [{ name: 'endless', url: `${url}${path}`, secret: 'whsec_' + Buffer.from('sink-secret-0123456789').toString('base64'), types: '*', timeoutMs: 5_000 }],
    } as unknown as ResolvedOptions;
    return new EventSinks(options, new MetricsService(undefined as never));
  }

  it.each([
    ['/200', { kind: 'done' }],
    ['/503', { kind: 'retry', reason: 'sink endless answered 503', retryAfterMs: undefined }],
  ])('%s with an endless body: the outcome by the status, the connection closed unread', async (path, outcome) => {
    written = 0;
    const sinks = sinksTo(path);
    await expect(sinks.deliver(sinks.get('endless')!, event)).resolves.toEqual(outcome);
    await closed;
    // The server wrote what the sockets' buffers took before the hang-up: far from endless.
    expect(written).toBeLessThan(32 * 1024 * 1024);
  });
});
