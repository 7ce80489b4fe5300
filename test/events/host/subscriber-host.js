'use strict';
/**
 * A host application embedding the built module (dist/) with one provider of its own whose method
 * is an @OnPaymentEvent subscriber, run as a process of its own by startup.e2e-spec.ts (a start that
 * fails in Jest's process would leave the module's connections open there).
 *
 *   SUBSCRIBE       the decorator's argument, as JSON ("order.paid", ["a", "b"], "*")
 *   IN_TRANSACTION  "true" for { inTransaction: true }
 *   DATABASE_URL, REDIS_URL, QUEUE_PREFIX
 *
 * Prints "started" and "closed" and exits 0 on a good start; one "Start failed: …" line and exit 1
 * otherwise (as the standalone service does).
 */
require('reflect-metadata');
const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { OnPaymentEvent, PaymentWebhooksModule } = require('../../../dist/src/index.js');
const { createLogger } = require('../../../dist/src/observability/logger.js');

class ShippingListener {
  onEvent() {}
}
const subscribed = JSON.parse(process.env.SUBSCRIBE);
const options = process.env.IN_TRANSACTION === 'true' ? { inTransaction: true } : {};
const descriptor = Object.getOwnPropertyDescriptor(ShippingListener.prototype, 'onEvent');
OnPaymentEvent(subscribed, options)(ShippingListener.prototype, 'onEvent', descriptor);
Injectable()(ShippingListener);

class HostModule {}
Module({
  imports: [
    PaymentWebhooksModule.forRoot({
      databaseUrl: process.env.DATABASE_URL,
      redisUrl: process.env.REDIS_URL,
      queuePrefix: process.env.QUEUE_PREFIX,
      adminToken: 'host-token',
      runWorkers: false,
      logger: createLogger({ level: 'silent' }),
    }),
  ],
  providers: [ShippingListener],
})(HostModule);

async function main() {
  const app = await NestFactory.create(HostModule, { abortOnError: false, logger: false, bodyParser: false });
  await app.init();
  process.stdout.write('started\n');
  await app.close();
  process.stdout.write('closed\n');
}

main().catch((err) => {
  process.stderr.write(`Start failed: ${err.message}\n`);
  process.exit(1);
});
