import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { json, urlencoded } from 'express';

/**
 * Body parsing for an app that hosts the module: JSON for every route except `/webhooks`, whose
 * raw bytes the signature guard reads itself (the signature covers them, and an over-size or
 * non-JSON body must get the contract's answer, not the parser's). Create the app with
 * `bodyParser: false` and call this before `listen`.
 */
export function configurePaymentWebhooksApp(app: INestApplication, options: { jsonLimit?: string } = {}): void {
  const express = app as NestExpressApplication;
  const parsers = [json({ limit: options.jsonLimit ?? '1mb' }), urlencoded({ extended: false })];
  express.use((req: { path: string }, res: unknown, next: (err?: unknown) => void) => {
    if (req.path.startsWith('/webhooks/')) return next();
    let i = 0;
    const run = (err?: unknown): void => {
      if (err || i === parsers.length) return next(err);
      (parsers[i++] as (req: unknown, res: unknown, next: (err?: unknown) => void) => void)(req, res, run);
    };
    run();
  });
}
