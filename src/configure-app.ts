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
      if (err) return parserError(err as { status?: number; type?: string }, res as JsonResponse);
      if (i === parsers.length) return next();
      (parsers[i++] as (req: unknown, res: unknown, next: (err?: unknown) => void) => void)(req, res, run);
    };
    run();
  });
}

interface JsonResponse {
  status(code: number): JsonResponse;
  json(body: unknown): void;
}

/** A body the parser refused gets the API's error shape, not Express's HTML page. */
function parserError(err: { status?: number; type?: string }, res: JsonResponse): void {
  if (err.status === 413) {
    res.status(413).json({ error: 'payload_too_large' });
    return;
  }
  res.status(400).json({
    error: 'validation_failed',
    details: [{ field: 'body', message: err.type === 'entity.parse.failed' ? 'the body is not valid JSON' : 'the body cannot be read' }],
  });
}
