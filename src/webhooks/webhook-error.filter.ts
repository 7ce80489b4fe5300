import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { WebhookError } from './webhook.errors';

/** The receive path's answers other than 200, noted for the delivery's log line and metrics. */
@Catch(WebhookError)
export class WebhookErrorFilter implements ExceptionFilter {
  catch(err: WebhookError, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    res.locals.pwAnswer = err.code;
    res.status(err.getStatus()).json(err.getResponse());
  }
}
