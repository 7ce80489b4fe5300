import { Injectable } from '@nestjs/common';
import { Writable } from 'node:stream';
import pino from 'pino';
import { OnPaymentEvent, PinoNestLogger } from '../../src';
import { createTestApp, TestApp } from '../support/app';
import { bodies, driver } from '../support/domain';

/**
 * A host hands its own logger to the module (docs/embedding.md#one-log-stream): the `logger` option
 * takes its pino logger, and `PinoNestLogger` makes Nest's own lines (the module's among them) go
 * through the same logger. Every line then comes out of the host's stream, with the host's fields.
 */
describe("the host's logger carries the module's lines", () => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const hostLogger = pino({ base: { app: 'shop' } }, stream);

  @Injectable()
  class Notifications {
    @OnPaymentEvent('order.paid')
    async paid(): Promise<void> {}
  }

  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ logger: hostLogger }, { providers: [Notifications], nestLogger: new PinoNestLogger(hostLogger) });
  });
  afterAll(() => t?.close());

  it("the module's Nest lines at start (its subscriber discovery) come out as the host's JSON lines", () => {
    const found = lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Notifications.paid subscribes to order.paid'));
    expect(found).toMatchObject({ app: 'shop', context: 'PaymentEvents', level: 30 });
  });

  it("the module's structured line of a delivery comes out through the host's logger, with the host's fields", async () => {
    const { eventId, body } = bodies.paymos('invoice.paid', `inv_${Date.now()}`);
    const res = await driver(t).send('paymos-a', 'paymos', body);
    expect(res.status).toBe(200);
    const deadline = Date.now() + 5_000;
    let line: Record<string, unknown> | undefined;
    while (!(line = lines.find((l) => l.msg === 'webhook delivery' && l.eventId === eventId)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(line).toMatchObject({ app: 'shop', endpoint: 'paymos-a', eventId, answer: 'accepted', status: 200 });
    expect(JSON.stringify(lines)).not.toContain('paymos-secret');
  });
});
