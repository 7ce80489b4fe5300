import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { sendJson } from '../http/platform';
import { DeliveryObserver } from './delivery-observer';
import { WebhookError } from './webhook.errors';

/** The receive path's answers other than 200, noted for the delivery's log line and metrics. */
@Catch(WebhookError)
export class WebhookErrorFilter implements ExceptionFilter {
  constructor(private readonly observer: DeliveryObserver) {}

  catch(err: WebhookError, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    this.observer.note(http.getRequest(), { answer: err.code });
    sendJson(http.getResponse(), err.getStatus(), err.getResponse());
  }
}
