import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
// The package's public entry point, as a host imports it.
import { applyServerLimits, configurePaymentWebhooksApp, PaymentWebhooksModule, ServerLimits } from '../../src';
import { createLogger } from '../../src/observability/logger';
import { ADMIN_TOKEN, createTestApp, deleteQueueKeys, eventually, Platform, TEST_ENDPOINTS } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { deliverFrom, HeldConnections, within } from '../support/raw-http';

/**
 * One address never holds more than a quarter of the connections the process accepts. A review
 * opened 4,300 sockets from one address, trickling headers: they filled the 4,096 connections of
 * the process, and of 28 authentic deliveries from another address only 7–12 got through on
 * Express (14 on Fastify), the rest closed unread (ECONNRESET). Here the same flood, on Express and
 * Fastify, in the standalone service (applyServerLimits) and in a host that caps its own server and
 * calls configurePaymentWebhooksApp: every delivery from another address is accepted, and the
 * flooding address holds exactly a quarter of the cap, the rest of its sockets closed on arrival.
 * Linux routes all of 127/8 on loopback, so each 127.0.0.x is a client of its own.
 */

const SOCKETS = 4_300;
const DELIVERIES = 28;
const CAP = 4_096;
const SHARE = CAP / 4;
/** Connections opened at once: each batch is taken by the server before the next, so the listen backlog never drops one. */
const BATCH = 250;
/** Long enough that the trickling senders are held for the whole test, as senders that reconnect would be. */
const HOLD: ServerLimits = { httpRequestTimeoutMs: 120_000, httpHeadersTimeoutMs: 120_000, httpKeepAliveTimeoutMs: 5_000, httpMaxConnections: CAP };
const START = 'POST /webhooks/standard-main HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Trickle: ';

/** Connections from one address that send the start of a request's headers, then one more byte a second. */
class Flood {
  readonly sockets: Socket[] = [];
  closed = 0;
  private readonly trickle = setInterval(() => {
    for (const socket of this.sockets) if (!socket.destroyed && !socket.connecting) socket.write('a');
  }, 1_000);

  constructor(
    private readonly port: number,
    readonly address: string,
  ) {}

  open(count: number): void {
    for (let i = 0; i < count; i++) {
      const socket = connect({ port: this.port, host: '127.0.0.1', localAddress: this.address });
      socket.on('error', () => undefined);
      socket.once('connect', () => socket.write(START));
      socket.once('close', () => this.closed++);
      this.sockets.push(socket);
    }
  }

  /** Sockets the server still holds open. */
  get stillOpen(): number {
    return this.sockets.length - this.closed;
  }

  async end(): Promise<void> {
    clearInterval(this.trickle);
    for (const socket of this.sockets) socket.destroy();
    await eventually(async () => this.closed === this.sockets.length, 20_000, 'the flood closed');
  }
}

/** The flood, in batches, each taken by the server (held, or closed on arrival) before the next. */
async function flood(port: number, address: string, held: HeldConnections): Promise<Flood> {
  const sockets = new Flood(port, address);
  for (let opened = 0; opened < SOCKETS; ) {
    const count = Math.min(BATCH, SOCKETS - opened);
    sockets.open(count);
    opened += count;
    await eventually(async () => held.of(address) + sockets.closed === opened, 30_000, `the server took ${opened} connections from ${address}`);
  }
  return sockets;
}

/** This process's soft limit of open files: both ends of every socket of the test are ours. */
function openFileLimit(): number {
  const soft = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
  return soft === undefined ? Infinity : Number(soft);
}

@Controller('host')
class HostController {
  @Get('ping')
  ping(): { pong: true } {
    return { pong: true };
  }
}

/** A host with a route of its own and its own server settings, the module imported and configurePaymentWebhooksApp called. */
async function hostApp(platform: Platform, queuePrefix: string): Promise<INestApplication> {
  @Module({
    imports: [
      PaymentWebhooksModule.forRoot({
        databaseUrl: TEST_DATABASE_URL,
        redisUrl: TEST_REDIS_URL,
        queuePrefix,
        endpoints: TEST_ENDPOINTS,
        adminToken: ADMIN_TOKEN,
        logger: createLogger({ level: 'silent' }),
        migrationsRun: false,
        runWorkers: false,
      }),
    ],
    controllers: [HostController],
  })
  class HostModule {}
  const moduleRef = await Test.createTestingModule({ imports: [HostModule] }).compile();
  const app = platform === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: ['error'] }) : moduleRef.createNestApplication({ logger: ['error'] });
  // The host's own cap, and timeouts long enough to hold the flood for the test.
  const server = app.getHttpServer() as Server;
  server.maxConnections = CAP;
  server.headersTimeout = HOLD.httpHeadersTimeoutMs;
  server.requestTimeout = HOLD.httpRequestTimeoutMs;
  configurePaymentWebhooksApp(app);
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}

const SETUPS = [
  ['the standalone service', 'express', '127.0.0.2', '127.0.0.3'],
  ['the standalone service', 'fastify', '127.0.0.12', '127.0.0.13'],
  ['a host (configurePaymentWebhooksApp)', 'express', '127.0.0.22', '127.0.0.23'],
  ['a host (configurePaymentWebhooksApp)', 'fastify', '127.0.0.32', '127.0.0.33'],
] as const;

describe.each(SETUPS)('one address holds at most a quarter of the connections: %s on %s', (setup, platform, attacker, client) => {
  let app: INestApplication;
  let close: () => Promise<void>;
  let server: Server;
  let port: number;
  let held: HeldConnections;
  let attack: Flood | undefined;

  beforeAll(async () => {
    const needed = SOCKETS + CAP + 1_000;
    if (openFileLimit() < needed) throw new Error(`this suite holds both ends of ${SOCKETS} sockets: raise the open-file limit to ${needed} (ulimit -n)`);
    if (setup === 'the standalone service') {
      const t = await createTestApp({}, { platform });
      app = t.app;
      close = () => t.close();
      applyServerLimits(app.getHttpServer(), HOLD);
    } else {
      const queuePrefix = `pwtest-${randomUUID().slice(0, 8)}`;
      app = await hostApp(platform, queuePrefix);
      close = async () => {
        await app.close();
        await deleteQueueKeys(queuePrefix);
      };
    }
    await app.listen(0, '127.0.0.1');
    server = app.getHttpServer();
    port = (server.address() as AddressInfo).port;
    held = new HeldConnections(server);
  }, 60_000);

  afterAll(async () => {
    await attack?.end();
    held?.stop();
    await close?.();
  }, 60_000);

  it(`${SOCKETS} sockets from one address trickling headers: all ${DELIVERIES} deliveries from another are accepted; it holds ${SHARE} of ${CAP}`, async () => {
    attack = await flood(port, attacker, held);

    const answers = await Promise.allSettled(Array.from({ length: DELIVERIES }, () => within(deliverFrom(port, client), 30_000, 'a delivery answered')));
    const outcomes = answers.map((a) => {
      if (a.status === 'rejected') return String((a.reason as NodeJS.ErrnoException)?.code ?? (a.reason as Error)?.message);
      return a.value.status === 200 && a.value.body.includes('"status":"accepted"') ? 'accepted' : `${a.value.status} ${a.value.body}`;
    });
    const tally = outcomes.reduce<Record<string, number>>((t, o) => ({ ...t, [o]: (t[o] ?? 0) + 1 }), {});
    expect(tally).toEqual({ accepted: DELIVERIES });

    // The flood held throughout: exactly its share, the rest closed on arrival; the cap is the configured one.
    expect(server.maxConnections).toBe(CAP);
    expect(held.of(attacker)).toBe(SHARE);
    expect(attack.stillOpen).toBe(SHARE);
    expect(attack.closed).toBe(SOCKETS - SHARE);

    // Gone, its share is free again: another connection from that address is taken.
    await attack.end();
    await eventually(async () => held.of(attacker) === 0, 20_000, "the flood's connections released");
    expect((await within(deliverFrom(port, attacker), 30_000, 'a delivery from the flooding address answered')).status).toBe(200);
  }, 180_000);
});
