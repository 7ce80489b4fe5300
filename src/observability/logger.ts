import type { LoggerService } from '@nestjs/common';
import pino, { Logger } from 'pino';

/**
 * Structured JSON logs (pino). Nothing here logs a request's headers or body: deliveries are
 * logged by endpoint, event id, answer and duration only; order addresses (`shipTo`), secrets and
 * signature values never reach a log line, and the redaction below is a second line of defence.
 */
export function createLogger(options: { level?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      base: { service: 'payment-webhooks' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: ['shipTo', '*.shipTo', 'headers', '*.headers', 'secret', 'secrets', '*.secrets', 'authorization', '*.authorization', 'apiKey', '*.apiKey'],
        censor: '[redacted]',
      },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/** Nest's logger interface on top of pino, so framework and module logs are JSON lines too. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string): void {
    this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}
