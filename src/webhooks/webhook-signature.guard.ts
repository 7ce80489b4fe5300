import { CanActivate, ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedOptions } from '../config/options';
import { rawRequest, rawResponse, restoreContentType, setHeader } from '../http/platform';
import { ClientAddresses } from '../http/client-address';
import { Clock, CLOCK, PW_OPTIONS } from '../config/tokens';
import { DeliveryObserver } from './delivery-observer';
import { EndpointRegistry } from './endpoint-registry';
import { KnownPayments } from './known-payments.service';
import { DELIVERY_REFUSALS, describeThrown, KeyedEvent, receiveDelivery } from '../providers';
import { liveKeys, ResolvedEndpoint } from './signature-verifier';
import { WebhookError } from './webhook.errors';

/** What the guard hands to the route once a delivery is authentic. */
export interface VerifiedDelivery {
  endpoint: ResolvedEndpoint;
  rawBody: Buffer;
  /** Index of the configured secret that matched; null for a provider checked another way. */
  secretIndex: number | null;
  /** The events it carries (one, or a batch's), keyed on their accounts. */
  events: KeyedEvent[];
}

/** The request as the webhook route sees it, on Express or Fastify. */
export interface WebhookRequest {
  params: Record<string, string | undefined>;
  headers: IncomingHttpHeaders;
  /** Set by Nest's `rawBody: true` (a host that keeps its parser for webhook routes too). */
  rawBody?: Buffer;
  verifiedDelivery?: VerifiedDelivery;
}

/** What an adapter may refuse a delivery with (docs/providers.md). */
const REFUSALS: ReadonlySet<string> = new Set(DELIVERY_REFUSALS);

const TOO_LARGE = Symbol('too-large');
const OVER_BUDGET = Symbol('over-budget');

/** The unverified bytes of one client's (remote address's) deliveries, and how many of them are being read. */
interface ClientBytes {
  bytes: number;
  deliveries: number;
}

/** The unverified bytes one delivery has taken, counted in the budget and in its client's share. */
export interface DeliveryBytes {
  readonly clientAddress: string;
  readonly ofClient: ClientBytes;
  bytes: number;
}

/**
 * Bytes of webhook bodies that have arrived and are not verified yet, in this process: a sender
 * that is not authentic yet cannot make the process hold more than the budget
 * (`unverifiedBodyBudgetBytes`), nor one client (a remote address, over any number of
 * connections) more than its share (`unverifiedBodyClientShareBytes`). Only bytes that arrived
 * count: a declared length is a promise, and idle connections promising much must not shut others
 * out. What a delivery took is given back once it is verified (or refused, or gone).
 */
export class UnverifiedBytes {
  private bytesTaken = 0;
  private readonly clients = new Map<string, ClientBytes>();
  constructor(
    readonly budget: number,
    readonly clientShare: number,
  ) {}

  /** Unverified bytes taken now, by every delivery. */
  get inFlight(): number {
    return this.bytesTaken;
  }

  /** Unverified bytes taken now by one client's deliveries. */
  heldBy(clientAddress: string): number {
    return this.clients.get(clientAddress)?.bytes ?? 0;
  }

  /**
   * A delivery from `clientAddress` starts; `end` it exactly once. The client's entry is kept while
   * any of its deliveries is read, so that a chunk costs no lookup.
   */
  begin(clientAddress: string): DeliveryBytes {
    let ofClient = this.clients.get(clientAddress);
    if (!ofClient) this.clients.set(clientAddress, (ofClient = { bytes: 0, deliveries: 0 }));
    ofClient.deliveries++;
    return { clientAddress, ofClient, bytes: 0 };
  }

  /** `bytes` more arrived for `delivery`; false, taking nothing, if its client's share or the budget would pass. */
  take(delivery: DeliveryBytes, bytes: number): boolean {
    if (delivery.ofClient.bytes + bytes > this.clientShare || this.bytesTaken + bytes > this.budget) return false;
    delivery.ofClient.bytes += bytes;
    delivery.bytes += bytes;
    this.bytesTaken += bytes;
    return true;
  }

  /** The delivery is verified, refused or gone: what it took is given back. */
  end(delivery: DeliveryBytes): void {
    this.bytesTaken -= delivery.bytes;
    delivery.ofClient.bytes -= delivery.bytes;
    delivery.bytes = 0;
    if (--delivery.ofClient.deliveries === 0) this.clients.delete(delivery.clientAddress);
  }
}

/**
 * Checks 1–6 of docs/webhooks.md#checks-and-answers, in order: known endpoint, body size, then the
 * provider's adapter (for most: signature present, a candidate matching a configured secret,
 * timestamp within tolerance, then the body). The body is read as raw bytes here, whatever its
 * content type, and a provider of the HMAC scheme never parses it before it is authentic.
 */
@Injectable()
export class WebhookSignatureGuard implements CanActivate {
  private readonly logger = new Logger('WebhookReceive');
  private readonly maxBytes: number;
  /** This module's budget of unverified bytes (public for the tests and the metrics to read). */
  readonly unverified: UnverifiedBytes;
  /** Longest wait for the adapter's verdict on a delivery (`receiveTimeoutMs`). */
  private readonly receiveTimeoutMs: number;
  /** Requests answered 503 while their adapter was still checking them. */
  private readonly cutOff = new WeakSet<WebhookRequest>();
  /**
   * Per endpoint, the bytes of deliveries answered 503 while their adapter still checks them: out of
   * the budget, but still in memory until the adapter answers. An endpoint whose abandoned checks
   * hold a whole budget takes no more bodies until they answer; other endpoints go on.
   */
  private readonly abandoned = new Map<string, number>();

  constructor(
    private readonly endpoints: EndpointRegistry,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly observer: DeliveryObserver,
    private readonly known: KnownPayments,
    private readonly clients: ClientAddresses,
  ) {
    this.maxBytes = options.webhookMaxBodyBytes;
    this.receiveTimeoutMs = options.tuning.receiveTimeoutMs;
    this.unverified = new UnverifiedBytes(options.tuning.unverifiedBodyBudgetBytes, options.tuning.unverifiedBodyClientShareBytes);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<WebhookRequest>();
    const endpoint = this.endpoints.get(req.params.endpointId as string);
    // Unknown ids share one label: a scanner must not grow the metrics without bound.
    this.observer.begin(req, http.getResponse(), endpoint?.id ?? 'unknown', endpoint?.provider.name ?? 'unknown', endpoint !== undefined);
    const raw = rawRequest(req);
    // The header was hidden from the app's body parsers (configurePaymentWebhooksApp); it is stored.
    restoreContentType(raw);
    if (!endpoint) throw new WebhookError('unknown_endpoint');
    if (this.abandonedBytes(endpoint.id) >= this.unverified.budget) {
      setHeader(http.getResponse(), 'Connection', 'close');
      throw new WebhookError('unavailable');
    }

    // One share per client: behind a trusted proxy, the address it forwards for
    // (docs/design.md#what-an-outsider-can-make-the-process-hold).
    // The hint budgets of an adapter that calls out are kept by the same address.
    const sender = this.clients.clientAddress(raw);
    const taken = this.unverified.begin(sender);
    try {
      const rawBody = await readRawBody(req, raw, this.maxBytes, this.unverified, taken);
      if (rawBody === TOO_LARGE || rawBody === OVER_BUDGET) {
        // The rest of the body is not read: close the connection rather than drain it.
        setHeader(http.getResponse(), 'Connection', 'close');
        // Over the budget or the client's share of unverified bytes: transient, the sender retries.
        throw new WebhookError(rawBody === TOO_LARGE ? 'payload_too_large' : 'unavailable');
      }
      return await this.withinDeadline(req, rawResponse(http.getResponse()), endpoint, this.verified(req, endpoint, rawBody, sender), rawBody.length);
    } finally {
      this.unverified.end(taken);
    }
  }

  /**
   * The adapter's verdict, or `503 unavailable` once `receiveTimeoutMs` has passed or the sender
   * has hung up, whichever comes first, even if the adapter never answers: the caller then gives
   * the delivery's unverified bytes back. A later verdict is ignored, and its rejection handled.
   */
  private async withinDeadline(req: WebhookRequest, res: ServerResponse, endpoint: ResolvedEndpoint, verdict: Promise<boolean>, bytes: number): Promise<boolean> {
    verdict.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    let onClose: (() => void) | undefined;
    const cut = new Promise<'deadline' | 'gone'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), this.receiveTimeoutMs);
      onClose = () => resolve('gone');
      // The response closes before it is written only when the connection goes.
      if (res.destroyed) onClose();
      else res.once('close', onClose);
    });
    try {
      const first = await Promise.race([verdict, cut]);
      if (typeof first === 'boolean') return first;
      this.cutOff.add(req);
      if (first === 'deadline') this.logger.warn(`delivery to ${endpoint.id} not checked within ${this.receiveTimeoutMs} ms: answered 503`);
      this.abandon(endpoint.id, bytes, verdict);
      throw new WebhookError('unavailable');
    } finally {
      clearTimeout(timer);
      if (onClose) res.off('close', onClose);
    }
  }

  /** Bytes of `endpointId`'s deliveries whose checks were given up on and have not answered yet. */
  abandonedBytes(endpointId: string): number {
    return this.abandoned.get(endpointId) ?? 0;
  }

  /** Counts a given-up check's body until its adapter answers (if ever), and says once when the endpoint stops taking bodies for it. */
  private abandon(endpointId: string, bytes: number, verdict: Promise<boolean>): void {
    const held = this.abandonedBytes(endpointId) + bytes;
    this.abandoned.set(endpointId, held);
    if (held >= this.unverified.budget && held - bytes < this.unverified.budget) {
      this.logger.error(
        `endpoint ${endpointId}: checks its provider's adapter never answered hold ${held} bytes; its deliveries are answered 503 until the adapter answers them`,
      );
    }
    const answered = () => {
      const left = this.abandonedBytes(endpointId) - bytes;
      if (left > 0) this.abandoned.set(endpointId, left);
      else this.abandoned.delete(endpointId);
    };
    verdict.then(answered, answered);
  }

  /** Checks 3–6, the provider's own way (docs/providers.md), then what every event must be. */
  private async verified(req: WebhookRequest, endpoint: ResolvedEndpoint, rawBody: Buffer, sender: string): Promise<boolean> {
    const nowMs = this.clock.now();
    let result;
    try {
      result = await receiveDelivery(endpoint, { headers: req.headers, body: rawBody }, liveKeys(endpoint, nowMs), nowMs, {
        sender,
        knowsPayment: (resourceId) => this.known.knows(endpoint, resourceId),
      });
    } catch (err) {
      // The adapter could not tell (a provider's API away, slow or refusing): transient, the sender retries.
      this.logger.warn(`delivery to ${endpoint.id} not checked: ${describeThrown(err)}`);
      throw new WebhookError('unavailable');
    }
    // Answered 503 already (past the deadline, or the sender gone): what the adapter says now is ignored.
    if (this.cutOff.has(req)) return false;
    if (!result.ok) {
      // A refusal the receive path answers; only a malformed body says why (a signature failure never does).
      if (!REFUSALS.has(result.error)) {
        // An adapter's bug, not the sender's: transient to the sender, which retries once it is fixed.
        this.logger.error(`provider "${endpoint.provider.name}" refused a delivery to ${endpoint.id} with an unknown error ${JSON.stringify(String(result.error)).slice(0, 80)}`);
        throw new WebhookError('unavailable');
      }
      throw new WebhookError(result.error, result.error === 'malformed_payload' ? result.detail : undefined);
    }
    if (result.secretIndex !== null) this.observer.secretMatched(endpoint.id, result.secretIndex, nowMs);
    req.verifiedDelivery = { endpoint, rawBody, secretIndex: result.secretIndex, events: result.events };
    return true;
  }
}

/**
 * The request's bytes, up to `limit`, each taken from the budget of unverified bytes as it arrives
 * (into `taken`, for the caller to give back). A host app that keeps Nest's body parser must create
 * the app with `rawBody: true`, or the bytes the signature covers are gone (docs/embedding.md#the-alternative-rawbody-true); those were
 * read by the host's parser, outside the budget.
 */
function readRawBody(
  req: WebhookRequest,
  raw: IncomingMessage,
  limit: number,
  budget: UnverifiedBytes,
  taken: DeliveryBytes,
): Promise<Buffer | typeof TOO_LARGE | typeof OVER_BUDGET> | Buffer | typeof TOO_LARGE | typeof OVER_BUDGET {
  const readByHost = req.rawBody ?? (raw as { rawBody?: Buffer }).rawBody;
  if (Buffer.isBuffer(readByHost)) return readByHost.length > limit ? TOO_LARGE : readByHost;
  if (raw.readableEnded) {
    throw new Error(
      'The webhook body was consumed before the webhook route: create the app with rawBody: true, ' +
        'or leave /webhooks out of the body parser (configurePaymentWebhooksApp does).',
    );
  }
  // The size limit first, before a byte is read; the budget counts only what arrives.
  if (Number(raw.headers['content-length']) > limit) return TOO_LARGE;
  // Gone before its body was read: its 'close' has passed, and nothing would end the read.
  if (raw.destroyed) throw new Error('request aborted before the body ended');

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
      if (!budget.take(taken, chunk.length)) {
        cleanup();
        raw.pause();
        resolve(OVER_BUDGET);
        return;
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
