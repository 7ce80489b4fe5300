import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { ResolvedOptions } from '../config/options';
import { rawRequest, restoreContentType, setHeader } from '../http/platform';
import { Clock, CLOCK, PW_OPTIONS } from '../payment-webhooks.constants';
import { DeliveryObserver } from './delivery-observer';
import { EndpointRegistry } from './endpoint-registry';
import { ResolvedEndpoint, verifySignature } from './signature-verifier';
import { WebhookError } from './webhook.errors';

/** What the guard hands to the route once a delivery is authentic. */
export interface VerifiedDelivery {
  endpoint: ResolvedEndpoint;
  rawBody: Buffer;
  /** Index of the configured secret that matched. */
  secretIndex: number;
}

/** The request as the webhook route sees it, on Express or Fastify. */
export interface WebhookRequest {
  params: Record<string, string | undefined>;
  headers: IncomingHttpHeaders;
  /** Set by Nest's `rawBody: true` (a host that keeps its parser for webhook routes too). */
  rawBody?: Buffer;
  verifiedDelivery?: VerifiedDelivery;
}

const TOO_LARGE = Symbol('too-large');
const OVER_BUDGET = Symbol('over-budget');

/**
 * Bytes of webhook bodies being read and not yet verified, in this process (issue 12, finding 4):
 * a sender that is not authentic yet cannot make the process hold more than the budget
 * (`unverifiedBodyBudgetBytes`). A delivery declaring its length takes that much at once; one
 * without takes its bytes as they come. What a delivery took is given back once it is verified
 * (or refused, or gone).
 */
export class UnverifiedBytes {
  private held = 0;
  constructor(readonly budget: number) {}

  /** Bytes taken now. */
  get inFlight(): number {
    return this.held;
  }

  take(bytes: number): boolean {
    if (this.held + bytes > this.budget) return false;
    this.held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }
}

/** What one delivery holds of the budget. */
interface Held {
  bytes: number;
}

/**
 * Checks 1–5 of CONTRACT §2, in order: known endpoint, body size, signature present, a `v1`
 * candidate matching a configured secret, timestamp within tolerance. The body is read as raw
 * bytes here, whatever its content type, and never parsed before it is authentic.
 */
@Injectable()
export class WebhookSignatureGuard implements CanActivate {
  private readonly maxBytes: number;
  /** This module's budget of unverified bytes (public for the tests and the metrics to read). */
  readonly unverified: UnverifiedBytes;

  constructor(
    private readonly endpoints: EndpointRegistry,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly observer: DeliveryObserver,
  ) {
    this.maxBytes = options.webhookMaxBodyBytes;
    this.unverified = new UnverifiedBytes(options.tuning.unverifiedBodyBudgetBytes);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<WebhookRequest>();
    const endpoint = this.endpoints.get(req.params.endpointId as string);
    // Unknown ids share one label: a scanner must not grow the metrics without bound.
    this.observer.begin(req, http.getResponse(), endpoint?.id ?? 'unknown', endpoint?.provider.name ?? 'unknown');
    const raw = rawRequest(req);
    // The header was hidden from the app's body parsers (configurePaymentWebhooksApp); it is stored.
    restoreContentType(raw);
    if (!endpoint) throw new WebhookError('unknown_endpoint');

    const held: Held = { bytes: 0 };
    try {
      const rawBody = await readRawBody(req, raw, this.maxBytes, this.unverified, held);
      if (rawBody === TOO_LARGE || rawBody === OVER_BUDGET) {
        // The rest of the body is not read: close the connection rather than drain it.
        setHeader(http.getResponse(), 'Connection', 'close');
        // Over the budget of unverified bytes: transient (CONTRACT §2), the sender retries.
        throw new WebhookError(rawBody === TOO_LARGE ? 'payload_too_large' : 'unavailable');
      }
      return this.verified(req, endpoint, rawBody);
    } finally {
      this.unverified.give(held.bytes);
    }
  }

  private verified(req: WebhookRequest, endpoint: ResolvedEndpoint, rawBody: Buffer): boolean {
    const nowMs = this.clock.now();
    const nowSeconds = Math.floor(nowMs / 1000);
    const result = verifySignature(endpoint, req.headers, rawBody, nowSeconds, nowMs);
    if (!result.ok) throw new WebhookError(result.error);
    this.observer.secretMatched(endpoint.id, result.secretIndex, nowSeconds);
    req.verifiedDelivery = { endpoint, rawBody, secretIndex: result.secretIndex };
    return true;
  }
}

/**
 * The request's bytes, up to `limit`, each taken from the budget of unverified bytes first (what
 * was taken is in `held`, for the caller to give back). A host app that keeps Nest's body parser
 * must create the app with `rawBody: true`, or the bytes the signature covers are gone (see README);
 * those were read by the host's parser, outside the budget.
 */
function readRawBody(
  req: WebhookRequest,
  raw: IncomingMessage,
  limit: number,
  budget: UnverifiedBytes,
  held: Held,
): Promise<Buffer | typeof TOO_LARGE | typeof OVER_BUDGET> | Buffer | typeof TOO_LARGE | typeof OVER_BUDGET {
  const kept = req.rawBody ?? (raw as { rawBody?: Buffer }).rawBody;
  if (Buffer.isBuffer(kept)) return kept.length > limit ? TOO_LARGE : kept;
  if (raw.readableEnded) {
    throw new Error(
      'The webhook body was consumed before the webhook route: create the app with rawBody: true, ' +
        'or leave /webhooks out of the body parser (configurePaymentWebhooksApp does).',
    );
  }
  const declared = Number(raw.headers['content-length']);
  if (declared > limit) return TOO_LARGE;
  // A declared length is taken at once: a new delivery past the budget is refused before a byte.
  if (Number.isInteger(declared) && declared > 0) {
    if (!budget.take(declared)) return OVER_BUDGET;
    held.bytes = declared;
  } else if (budget.inFlight >= budget.budget) {
    return OVER_BUDGET;
  }

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onError);
      raw.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        raw.pause();
        resolve(TOO_LARGE);
        return;
      }
      // More than declared, or nothing declared (chunked): taken as it comes.
      if (size > held.bytes) {
        if (!budget.take(size - held.bytes)) {
          cleanup();
          raw.pause();
          resolve(OVER_BUDGET);
          return;
        }
        held.bytes = size;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    // A sender that hangs up mid-body gets no answer; nothing was recorded.
    const onClose = () => onError(new Error('request aborted before the body ended'));
    raw.on('data', onData);
    raw.on('end', onEnd);
    raw.on('error', onError);
    raw.on('close', onClose);
  });
}
