import { isDeepStrictEqual } from 'node:util';
import { Answer, deliver, Delivery, describeAnswer, describeWithCause, joinUrl, send, signDelivery, webhookUrl } from './delivery';
import { ADYEN_ACCEPTED, adyenEventId, isAdyenAccepted, itemsOf, NotificationItem, notificationBody } from './adyen';
import { EventKind, newEventId, newResourceId, PayloadStyle, PaymentRef, providerEvent, RemoteProvider, stripeEvent, thinEventId, type ThinEvent, wireBody } from './events';
import type { ObjectServer } from './objects-server';

/**
 * The re-delivery checks a team runs before going live, against any
 * running service that implements the contract: only its REST API and signed deliveries are used,
 * so what is checked is the deployment — gateway, proxies, secrets, workers, carrier — not the code.
 */

export interface ConformanceOptions {
  /** Base URL of the service, route prefix included (`https://staging.example.com/pay`). */
  url: string;
  endpoint: string;
  provider: RemoteProvider;
  /** The endpoint's secret; every one given signs (one entry each; standard: `v1` for a `whsec_`, `v1a` for a `whsk_`), as during a rotation. */
  secrets: string[];
  adminToken: string;
  /** The account bodies declare and payments are registered under; needed on a `merchantAccountIds` endpoint. */
  merchant?: string;
  /** The carrier orders name (default: the service's `default`). */
  carrier?: string;
  /** How long each wait for processing or fulfilment may take. */
  waitMs: number;
  /** Each HTTP request's own timeout. */
  requestTimeoutMs: number;
  /** Told each check's result as it ends (the command prints a line at once). */
  onResult?: (result: CheckResult) => void;
  /** Stripe: `thin` plays an endpoint of thin notifications (default `snapshot`), whose objects `objects` serves. */
  payloadStyle?: PayloadStyle;
  /** With thin: the kit's objects server, the endpoint's `apiBaseUrl`; the run puts each object in before its notification. */
  objects?: ObjectServer;
  /** Square: the endpoint's `notificationUrl`, signed before the body. */
  notificationUrl?: string;
  /** PayPal: where the kit serves its signing certificate (`PAYPAL-CERT-URL`); `secrets[0]` is the endpoint's webhookId. */
  paypalCertUrl?: string;
}

export interface CheckResult {
  check: CheckName;
  pass: boolean;
  /** The evidence: what was sent and answered, what the service shows. */
  detail: string;
  /** On a failure: what to look at. */
  hint?: string;
}

export const CHECKS = [
  'reachable',
  'signature',
  'delivery',
  'duplicate',
  'concurrent',
  'stale',
  'amount',
  'missing-object',
  'fetched-once',
  'reprocess',
  'reserialised',
  'tampered',
  'reconciliation',
] as const;
export type CheckName = (typeof CHECKS)[number];

/**
 * The checks run for `provider`: for Adyen, `tampered` stands for `reserialised`. Adyen signs named
 * fields of each item, not the bytes, so a body parsed and serialised again verifies as it should;
 * what its signature protects is those fields, and a changed one must be refused.
 */
export function checksFor(provider: RemoteProvider, style: PayloadStyle = 'snapshot'): CheckName[] {
  return CHECKS.filter((c) => (provider === 'adyen' ? c !== 'reserialised' : c !== 'tampered') && (style === 'thin' || !THIN_ONLY.includes(c)));
}

/** The checks of thin notifications only: the object a notification names, read from the kit's server. */
const THIN_ONLY: readonly CheckName[] = ['missing-object', 'fetched-once'];

/** What a check describes in one line, for `--help` and the docs. */
export const CHECK_SUMMARIES: Record<CheckName, string> = {
  reachable: 'the service answers /health, and the admin token opens its API',
  signature: 'a delivery signed with the secret is accepted, in compact and in pretty-printed JSON (adyen: one of two items too)',
  delivery: 'a paid event for a new order is processed and the order fulfilled once',
  duplicate: 'the same delivery again, as sent and re-signed (adyen: beside a new item), answers duplicate and changes nothing',
  concurrent: 'ten copies of a new event sent at once give one accepted',
  stale:
    'a late pending after succeeded is stale and nothing goes back (adyen: the refused AUTHORISATION of the paid payment; paddle: its transaction.payment_failed; paypal: CHECKOUT.ORDER.APPROVED; square: payment.created APPROVED; thin: the object read is the succeeded one)',
  amount: 'a wrong amount is rejected with no shipment (thin: the object served says the wrong amount)',
  'missing-object': 'thin only: a notification whose object does not exist (404 resource_missing) ends rejected/resource_not_found, no shipment',
  'fetched-once': "thin only: each notification recorded so far made exactly one request for its object at the kit's server, none of a duplicate",
  reprocess: 'a reprocess of the paid and of the rejected delivery changes nothing',
  reserialised: 'a body parsed and serialised again after signing is refused (not adyen)',
  tampered: 'adyen, for reserialised: a delivery with a signed field (amount.value) changed after signing is refused 401, nothing of it recorded',
  reconciliation: 'reconciliation names a paid id that never arrived, and only that one',
};

const CONCURRENT_COPIES = 10;
const ORDER_AMOUNT = '49.90';
const WRONG_AMOUNT = '4.99';
const CURRENCY = 'EUR';

/** A check's failure, with what to look at. */
class Failed extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}
/** A check that could not run: one it builds on failed, or the service refused what it needs to set up. */
class NotRun extends Failed {}

interface Order {
  id: string;
  status: string;
  fulfillment: null | { id: string; status: string; shipmentId: string | null };
  payments: Array<{ id: string; status: string; providerPaymentId: string }>;
  [key: string]: unknown;
}

interface ArchiveItem {
  id: string;
  eventId: string;
  merchantAccountId: string;
  status: string;
  outcome: string | null;
  processedAt: string | null;
}

/** A paid order the checks build on: its order, payment and the delivery that paid it. */
interface PaidOrder {
  order: Order;
  payment: PaymentRef;
  delivery: Delivery;
  row: ArchiveItem;
  /** The answer to the same delivery, byte for byte, sent again at once (its timestamp still fresh). */
  identicalCopy: Answer;
}

export async function runConformance(options: ConformanceOptions): Promise<CheckResult[]> {
  return new ConformanceRun(options).run();
}

class ConformanceRun {
  private readonly run_ = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  private orders = 0;
  private readonly results: CheckResult[] = [];
  private paid: PaidOrder | undefined;
  private rejected: { order: Order; row: ArchiveItem } | undefined;
  private concurrentOrder: Order | undefined;
  /** Set when a 2xx came that is not the service's: what follows cannot tell the service's answers from a proxy's. */
  private foreignAnswers = false;
  /** Whether any delivery verified at all (the compact probe of the signature check). */
  private verified = false;
  /** Thin: the path of the object each notification sent names (those the service reads). */
  private readonly objectPaths = new Map<string, string>();
  /** Thin: the notifications the service recorded (answered accepted), so each must read its object once. */
  private readonly recorded = new Set<string>();

  constructor(private readonly o: ConformanceOptions) {}

  /**
   * Adyen is played its own way: several signed items in one delivery, the answer `[accepted]` for
   * a new delivery and a recorded one alike (so what was recorded is read from the archive), no
   * signed timestamp, ids derived from the items.
   */
  private get adyen(): boolean {
    return this.o.provider === 'adyen';
  }

  /** Stripe thin notifications, their objects served by the kit (`objects`). */
  private get thin(): boolean {
    return this.o.payloadStyle === 'thin' && this.o.objects !== undefined;
  }

  /** The service's answer to a recorded delivery, naming the event sent (Adyen: `[accepted]`, which names none and is the same for a duplicate). */
  private answered(answer: Answer, word: 'accepted' | 'duplicate', eventId: string): boolean {
    return this.adyen ? isAdyenAccepted(answer) : isAnswer(answer, word, eventId);
  }

  /** What a delivery is, in a detail line: its event type (Adyen: each item's code, and a success "false"). */
  private what(delivery: Delivery): string {
    if (!this.adyen) return eventTypeOf(delivery);
    return itemsOf(JSON.parse(delivery.body))
      .map((item) => `${String(item.eventCode)}${item.success === 'false' ? ' (success "false")' : ''}`)
      .join(' + ');
  }

  async run(): Promise<CheckResult[]> {
    await this.check('reachable', [], () => this.reachable());
    await this.check('signature', ['reachable'], () => this.signature());
    await this.check('delivery', ['signature'], () => this.delivery());
    await this.check('duplicate', ['delivery'], () => this.duplicate());
    await this.check('concurrent', ['signature'], () => this.concurrent());
    await this.check('stale', ['delivery'], () => this.stale());
    await this.check('amount', ['signature'], () => this.amount());
    if (this.thin) {
      await this.check('missing-object', ['signature'], () => this.missingObject());
      // Before reprocess, which reads the objects again.
      await this.check('fetched-once', ['delivery'], () => this.fetchedOnce());
    }
    await this.check('reprocess', ['delivery', 'amount'], () => this.reprocess());
    if (this.adyen) await this.check('tampered', ['reachable'], () => this.tampered());
    else await this.check('reserialised', ['reachable'], () => this.reserialised());
    await this.check('reconciliation', ['delivery'], () => this.reconciliation());
    return this.results;
  }

  private async check(check: CheckName, needs: CheckName[], body: () => Promise<string>): Promise<void> {
    let result: CheckResult;
    const missing = needs.filter((n) => !this.results.find((r) => r.check === n)?.pass);
    if (missing.length > 0) {
      result = { check, pass: false, detail: `not run: needs ${missing.join(' and ')}, which failed` };
    } else {
      try {
        result = { check, pass: true, detail: await body() };
      } catch (err) {
        if (!(err instanceof Failed)) result = { check, pass: false, detail: `the check itself failed: ${(err as Error).message}` };
        else {
          const detail = err instanceof NotRun ? `not run: ${err.message}` : err.message;
          result = { check, pass: false, detail, ...(err.hint ? { hint: err.hint } : {}) };
        }
      }
    }
    this.results.push(result);
    this.o.onResult?.(result);
  }

  // --- the checks -------------------------------------------------------------------------

  private async reachable(): Promise<string> {
    const health = await this.http('GET', '/health');
    if (health.status !== 200) {
      throw new Failed(
        `GET ${joinUrl(this.o.url, '/health')} answered ${describeWithCause(health)}`,
        health.status >= 500
          ? 'something answers at --url but not well: the service (its logs, GET /health/ready for the database and Redis) or the proxy in front of it'
          : health.status === 0
            ? 'nothing answers at --url: is the service up, and reachable from here (host, port, TLS)?'
            : 'is --url the base URL of the service, its route prefix included (http://host:3000/pay)?',
      );
    }
    const list = await this.http('GET', '/orders?limit=1');
    if (list.status === 401) throw new Failed('GET /orders answered 401 unauthorized', 'the admin token (--admin-token, else ADMIN_TOKEN here) is not the service\'s ADMIN_TOKEN');
    if (list.status === 503) throw new Failed(`GET /orders answered ${describeAnswer(list)}`, 'the service has no ADMIN_TOKEN set (its API is off)');
    if (list.status !== 200 || !Array.isArray(list.json?.items)) {
      throw new Failed(`GET /orders answered ${describeAnswer(list)}, not the contract's list`, 'is --url pointing at this service, and not at something in front of it?');
    }
    return `/health 200; GET /orders 200 with the admin token`;
  }

  private async signature(): Promise<string> {
    if (this.adyen) return this.adyenSignature();
    const payment = this.newPayment();
    const pretty = this.signed('ignored', payment);
    const compactEvent = this.built('ignored', payment);
    const compact = this.sign(compactEvent.eventId, JSON.stringify(compactEvent.body));
    const [a, b] = [await deliver(pretty, this.o.requestTimeoutMs), await deliver(compact, this.o.requestTimeoutMs)];
    const okA = isAnswer(a, 'accepted', pretty.eventId);
    const okB = isAnswer(b, 'accepted', compact.eventId);
    this.verified = okA || okB;
    const evidence = `pretty-printed body: ${describeAnswer(a)}; compact body: ${describeAnswer(b)}`;
    if (okA && okB) return `${evidence} (events of type ${eventTypeOf(pretty)}, recorded and ignored)`;
    const answers = [a, b];
    const has = (word: string) => answers.some((x) => x.json?.error === word);
    if (answers.some((x) => x.status >= 200 && x.status < 300 && !isContractAnswer(x))) {
      this.foreignAnswers = true;
      throw new Failed(
        `${evidence}; a 2xx that is not the service's answer (${truncate(answers.find((x) => x.status < 300)?.text ?? '')})`,
        'something in front of the service answers for it (a proxy, a load balancer, a mock left in place): a provider stops retrying on that 2xx and the event is lost; route /webhooks/* to the service',
      );
    }
    if (has('unknown_endpoint')) throw new Failed(evidence, `the service has no endpoint "${this.o.endpoint}" (WEBHOOK_ENDPOINTS)`);
    if (has('timestamp_out_of_tolerance')) throw new Failed(evidence, "this machine's clock and the service's differ by more than the endpoint's toleranceSeconds");
    if (has('missing_signature')) {
      throw new Failed(evidence, `the signature headers did not reach the service: a proxy drops them, or the endpoint's provider is not ${this.o.provider}`);
    }
    if (!okA && okB && a.json?.error === 'invalid_signature') {
      throw new Failed(
        `${evidence}: the compact form verifies and the pretty-printed one does not`,
        'something between here and the service parses and serialises JSON bodies again (an API gateway, a body-parsing middleware before the webhook route): the signature covers the raw bytes, so every provider delivery that is not already compact fails; pass /webhooks/* through untouched',
      );
    }
    if (has('invalid_signature') && this.o.provider === 'paypal') {
      throw new Failed(
        evidence,
        `no signature verified: --secret is not endpoint "${this.o.endpoint}"'s webhookId, or the endpoint does not trust the kit: its certHosts must list ${hostOf(this.o.paypalCertUrl)} and its caFile hold the kit's CA (payment-webhooks paypal-test-ca)`,
      );
    }
    if (has('invalid_signature') && this.o.provider === 'square') {
      throw new Failed(
        evidence,
        `no signature matched: the signature key (--secret) is not endpoint "${this.o.endpoint}"'s, or --notification-url (${this.o.notificationUrl}) is not its notificationUrl exactly (Square signs the URL before the body)`,
      );
    }
    if (has('invalid_signature')) {
      throw new Failed(
        evidence,
        `no signature matched: the secret (--secret or --secret-file) is not one of endpoint "${this.o.endpoint}"'s secrets (after a rotation, the new one), or the bytes are changed on the way (a proxy re-encoding or re-serialising bodies)`,
      );
    }
    if (has('malformed_payload')) {
      const detail = answers.find((x) => x.json?.error === 'malformed_payload')?.json?.detail;
      const style = typeof detail === 'string' && /v2\.core\.event|payloadStyle/.test(detail);
      throw new Failed(
        `${evidence}${detail ? ` (${String(detail)})` : ''}`,
        style
          ? this.thin
            ? `endpoint "${this.o.endpoint}" takes snapshot events: run without --payload-style thin, or against an endpoint with "payloadStyle": "thin"`
            : `endpoint "${this.o.endpoint}" takes thin notifications: run with --payload-style thin --serve-objects <host:port> (its apiBaseUrl)`
          : this.o.merchant
            ? 'is --merchant one of the endpoint\'s accounts?'
            : 'a merchantAccountIds endpoint needs --merchant <account>',
      );
    }
    if (this.o.provider === 'paypal' && answers.some((x) => x.status === 503)) {
      throw new Failed(
        evidence,
        `the service could not fetch the kit's certificate from ${this.o.paypalCertUrl}: the kit serves it on 127.0.0.1, so the service must run on this machine (or --paypal-cert-port be forwarded to it); its logs say why`,
      );
    }
    if (answers.some((x) => x.status === 503 || x.status === 0)) {
      throw new Failed(evidence, 'the service could not record the delivery (its database or Redis is away, or it is overloaded): look at /health/ready and its logs');
    }
    throw new Failed(evidence, 'the answer is not one the contract defines for a correctly signed delivery');
  }

  /**
   * Adyen: a pretty-printed delivery of two items, and a compact one of one item, each item signed
   * on its own; every item must be recorded (the archive), since `[accepted]` names no event.
   */
  private async adyenSignature(): Promise<string> {
    const pair = this.batch([this.event('ignored', this.newPayment()), this.event('ignored', this.newPayment())]);
    const single = this.signed('ignored', this.newPayment());
    const compact: Delivery = { ...single, body: JSON.stringify(JSON.parse(single.body)) };
    const [a, b] = [await deliver(pair, this.o.requestTimeoutMs), await deliver(compact, this.o.requestTimeoutMs)];
    const evidence = `a delivery of 2 items: ${describeAnswer(a)}; a compact one of 1 item: ${describeAnswer(b)}`;
    const answers = [a, b];
    if (isAdyenAccepted(a) || isAdyenAccepted(b)) {
      const ids = [...(isAdyenAccepted(a) ? pair.eventIds! : []), ...(isAdyenAccepted(b) ? compact.eventIds! : [])];
      const counts = await Promise.all(ids.map(async (id) => (await this.rows(id)).length));
      const unrecorded = ids.filter((_, i) => counts[i] !== 1);
      if (unrecorded.length > 0) {
        this.foreignAnswers = true;
        throw new Failed(
          `${evidence}; yet the archive holds no single row of ${unrecorded.join(', ')}`,
          'something in front of the service answers [accepted] for it (a proxy, a mock left in place): Adyen stops retrying on that 2xx and the event is lost; route /webhooks/* to the service',
        );
      }
      this.verified = true;
    }
    if (isAdyenAccepted(a) && isAdyenAccepted(b)) return `${evidence}; all 3 items recorded (REPORT_AVAILABLE, recorded and ignored)`;
    const has = (word: string) => answers.some((x) => x.json?.error === word);
    if (answers.some((x) => x.status >= 200 && x.status < 300 && !isAdyenAccepted(x))) {
      this.foreignAnswers = true;
      throw new Failed(
        `${evidence}; a 2xx that is not the service's answer ${ADYEN_ACCEPTED} (${truncate(answers.find((x) => x.status < 300)?.text ?? '')})`,
        'something in front of the service answers for it (a proxy, a load balancer, a mock left in place): Adyen stops retrying on that 2xx and the event is lost; route /webhooks/* to the service',
      );
    }
    if (has('unknown_endpoint')) throw new Failed(evidence, `the service has no endpoint "${this.o.endpoint}" (WEBHOOK_ENDPOINTS)`);
    if (has('missing_signature')) throw new Failed(evidence, `the endpoint's provider is not adyen (its signature is not inside the body)`);
    if (has('invalid_signature')) {
      throw new Failed(
        evidence,
        `no item verified: the HMAC key (--secret or --secret-file, the first line) is not one of endpoint "${this.o.endpoint}"'s secrets (after generating a new key in the Customer Area, the new one)`,
      );
    }
    if (has('malformed_payload')) {
      const detail = answers.find((x) => x.json?.error === 'malformed_payload')?.json?.detail;
      throw new Failed(`${evidence}${detail ? ` (${String(detail)})` : ''}`, 'the endpoint is not an adyen one, or something changes the body on the way');
    }
    if (answers.some((x) => x.status === 503 || x.status === 0)) {
      throw new Failed(evidence, 'the service could not record the delivery (its database or Redis is away, or it is overloaded): look at /health/ready and its logs');
    }
    throw new Failed(evidence, 'the answer is not one the contract defines for a correctly signed delivery');
  }

  private async delivery(): Promise<string> {
    const order = await this.createOrder();
    const payment = await this.registerPayment(order);
    const delivery = this.signed('succeeded', payment);
    const answer = await this.deliverExpecting(delivery, 'accepted');
    // The same bytes again at once, as a sender that timed out does; judged by the duplicate check.
    // Sent now, while its signed timestamp is fresh: after the waits below it could be outside the
    // endpoint's tolerance, and a correct service would refuse it for that.
    const identicalCopy = await deliver(delivery, this.o.requestTimeoutMs);
    const row = await this.settled(delivery.eventId, this.thin ? this.objectHint(delivery.eventId) : undefined);
    if (row.status !== 'processed' || row.outcome !== 'applied') {
      throw new Failed(`the delivery ended ${row.status}/${row.outcome}, not processed/applied`, this.thin ? this.objectHint(delivery.eventId)() : hintFor(row));
    }
    if (this.adyen) {
      const authorized = (await this.order(order.id)).payments.find((p) => p.providerPaymentId === payment.resourceId)?.status === 'authorized';
      if (authorized) {
        throw new Failed(
          `AUTHORISATION ${payment.resourceId} made the payment authorized, not succeeded`,
          'the endpoint captures manually ("capture": "manual"): the checks play automatic capture, Adyen\'s default, where the AUTHORISATION is the payment; run them against an endpoint with automatic capture',
        );
      }
    }
    const fulfilled = await this.fulfilled(order.id);
    this.paid = { order: fulfilled, payment, delivery, row, identicalCopy };
    const read = this.thin ? ` (its object read from the kit at ${this.objectPaths.get(delivery.eventId)})` : '';
    return `${this.adyen ? `AUTHORISATION ${payment.resourceId}: ` : ''}${describeAnswer(answer)}; delivery processed/applied${read}; order ${order.id} fulfilled, shipment ${fulfilled.fulfillment?.shipmentId}`;
  }

  private async duplicate(): Promise<string> {
    if (this.adyen) return this.adyenDuplicate();
    const { order, delivery, payment, identicalCopy: again } = this.paid!;
    const before = await this.order(order.id);
    // A provider's own retry: the same event and bytes, signed again with the time of the attempt.
    const resigned = this.sign(delivery.eventId, delivery.body, Math.floor(Date.now() / 1000) + 1);
    const resent = await deliver(resigned, this.o.requestTimeoutMs);
    for (const [what, answer] of [['the same delivery', again], ['a re-signed copy', resent]] as const) {
      if (!isAnswer(answer, 'duplicate', delivery.eventId)) {
        throw new Failed(
          `${what} answered ${describeAnswer(answer)}, not 200 duplicate`,
          answer.json?.status === 'accepted'
            ? 'the service recorded the event twice: its inbox is not keyed by (provider, merchant account, event id)'
            : undefined,
        );
      }
    }
    const rows = await this.rows(delivery.eventId);
    if (rows.length !== 1) throw new Failed(`the archive holds ${rows.length} deliveries of event ${delivery.eventId}, not 1`);
    const after = await this.order(order.id);
    if (!isDeepStrictEqual(after, before)) throw new Failed(`order ${order.id} changed: ${diff(before, after)}`);
    return `same bytes: ${describeAnswer(again)}; re-signed: ${describeAnswer(resent)}; one archive row; order ${order.id} (${after.status}, payment ${payment.resourceId}) unchanged`;
  }

  /**
   * Adyen: the same delivery again, and the paid item again in a new delivery beside a new item (as
   * Adyen batches a retry with what came since): both `[accepted]`; the archive holds the paid event
   * once and the new one once; the order is unchanged.
   */
  private async adyenDuplicate(): Promise<string> {
    const { order, delivery, payment, identicalCopy: again } = this.paid!;
    const before = await this.order(order.id);
    const fresh = this.event('ignored', this.newPayment());
    const batch = this.batch([{ items: itemsOf(JSON.parse(delivery.body)) }, fresh]);
    const batched = await deliver(batch, this.o.requestTimeoutMs);
    for (const [what, answer] of [['the same delivery', again], ['the paid item again beside a new one', batched]] as const) {
      if (!isAdyenAccepted(answer)) throw new Failed(`${what} answered ${describeAnswer(answer)}, not 200 ${ADYEN_ACCEPTED}`);
    }
    const rows = await this.rows(delivery.eventId);
    if (rows.length !== 1) {
      throw new Failed(
        `the archive holds ${rows.length} deliveries of event ${delivery.eventId}, not 1`,
        rows.length > 1 ? 'the service recorded the event twice: its inbox is not keyed by (provider, merchant account, event id)' : undefined,
      );
    }
    const freshRows = await this.rows(batch.eventIds![1]);
    if (freshRows.length !== 1) throw new Failed(`the new item ${batch.eventIds![1]} of that delivery is in the archive ${freshRows.length} times, not once`);
    const after = await this.order(order.id);
    if (!isDeepStrictEqual(after, before)) throw new Failed(`order ${order.id} changed: ${diff(before, after)}`);
    return `same bytes: ${describeAnswer(again)}; the paid item beside a new one: ${describeAnswer(batched)}; one archive row of ${delivery.eventId}, the new item recorded; order ${order.id} (${after.status}, payment ${payment.resourceId}) unchanged`;
  }

  private async concurrent(): Promise<string> {
    const order = await this.createOrder();
    const payment = await this.registerPayment(order);
    const delivery = this.signed('succeeded', payment);
    const answers = await Promise.all(Array.from({ length: CONCURRENT_COPIES }, () => deliver(delivery, this.o.requestTimeoutMs)));
    const accepted = answers.filter((a) => isAnswer(a, 'accepted', delivery.eventId)).length;
    const duplicates = answers.filter((a) => isAnswer(a, 'duplicate', delivery.eventId)).length;
    if (accepted > 0) this.recorded.add(delivery.eventId);
    const tally = tallyAnswers(answers);
    // Adyen: every copy answered [accepted]; that one was recorded is the archive's to show (below).
    const answeredWell = this.adyen ? answers.every(isAdyenAccepted) : accepted === 1 && duplicates === CONCURRENT_COPIES - 1;
    if (!answeredWell) {
      throw new Failed(
        `${CONCURRENT_COPIES} copies at once answered ${tally}`,
        accepted > 1
          ? 'more than one copy was recorded: the inbox needs a unique constraint on (provider, merchant account, event id), not a read before the insert'
          : 'a copy was refused or went unanswered: under concurrent deliveries the service must answer each one (503 only when it cannot record)',
      );
    }
    const rows = await this.rows(delivery.eventId);
    if (rows.length !== 1) {
      throw new Failed(
        `${CONCURRENT_COPIES} copies at once answered ${tally}, and the archive holds ${rows.length} deliveries of event ${delivery.eventId}, not 1`,
        rows.length > 1 ? 'more than one copy was recorded: the inbox needs a unique constraint on (provider, merchant account, event id), not a read before the insert' : undefined,
      );
    }
    await this.settled(delivery.eventId);
    this.concurrentOrder = await this.fulfilled(order.id);
    return `${CONCURRENT_COPIES} copies at once: ${tally}; one archive row; order ${order.id} fulfilled once (shipment ${this.concurrentOrder.fulfillment?.shipmentId})`;
  }

  private async stale(): Promise<string> {
    const { order, payment } = this.paid!;
    const before = await this.order(order.id);
    // Adyen has no event before the authorisation: the refused outcome of the same AUTHORISATION
    // (success "false", a failed payment) lies behind the paid one.
    // Thin: the object is left as it is, succeeded: a late notification reads the current state.
    const late = this.signed('early', payment, false);
    const answer = await this.deliverExpecting(late, 'accepted');
    const row = await this.settled(late.eventId);
    if (row.status !== 'processed' || row.outcome !== 'stale') {
      throw new Failed(
        `a late ${this.what(late)} after succeeded ended ${row.status}/${row.outcome}, not processed/stale`,
        'the payment lifecycle must never go backwards: an event whose state lies before the current one is stale',
      );
    }
    const after = await this.order(order.id);
    const paymentBefore = before.payments.find((p) => p.providerPaymentId === payment.resourceId);
    const paymentAfter = after.payments.find((p) => p.providerPaymentId === payment.resourceId);
    if (!isDeepStrictEqual(after, before)) throw new Failed(`order ${order.id} changed: ${diff(before, after)}`);
    const read = this.thin ? ' (the object read is the succeeded PaymentIntent)' : '';
    return `late ${this.what(late)}${read}: ${describeAnswer(answer)}, processed/stale; payment still ${paymentAfter?.status ?? paymentBefore?.status}, order still ${after.status}`;
  }

  private async amount(): Promise<string> {
    const order = await this.createOrder();
    const payment = await this.registerPayment(order);
    const delivery = this.signed('succeeded', { ...payment, amount: WRONG_AMOUNT });
    const answer = await this.deliverExpecting(delivery, 'accepted');
    const row = await this.settled(delivery.eventId);
    if (row.status !== 'rejected' || row.outcome !== 'amount_mismatch') {
      throw new Failed(`${WRONG_AMOUNT} ${CURRENCY} for an order of ${ORDER_AMOUNT} ended ${row.status}/${row.outcome}, not rejected/amount_mismatch`, hintFor(row));
    }
    const after = await this.order(order.id);
    if (after.status !== 'awaiting_payment' || after.fulfillment !== null) {
      throw new Failed(`order ${order.id} is ${after.status} with fulfillment ${JSON.stringify(after.fulfillment)} after an underpayment`);
    }
    this.rejected = { order: after, row };
    const said = this.thin ? ' (the object served says so)' : '';
    return `${WRONG_AMOUNT} ${CURRENCY} for ${ORDER_AMOUNT}${said}: ${describeAnswer(answer)}, rejected/amount_mismatch; order still awaiting_payment, no fulfillment`;
  }

  /**
   * Thin: a notification of a PaymentIntent the kit never held (404 `resource_missing`, as Stripe
   * answers for a deleted object or one of another account) ends `rejected`/`resource_not_found`,
   * and its order is left unpaid.
   */
  private async missingObject(): Promise<string> {
    const order = await this.createOrder();
    const payment = await this.registerPayment(order);
    const delivery = this.signed('succeeded', payment, false);
    const path = this.objectPaths.get(delivery.eventId)!;
    const answer = await this.deliverExpecting(delivery, 'accepted');
    const row = await this.settled(delivery.eventId, this.objectHint(delivery.eventId));
    const asked = this.o.objects!.requests.filter((r) => r.path === path);
    if (row.status !== 'rejected' || row.outcome !== 'resource_not_found') {
      throw new Failed(
        `a notification of ${path}, which the kit does not hold (${asked.length} request(s): ${asked.map((r) => r.status).join(', ') || 'none'}), ended ${row.status}/${row.outcome}, not rejected/resource_not_found`,
        asked.length === 0
          ? this.objectHint(delivery.eventId)()
          : "a 404 resource_missing is Stripe's final word (the object was deleted, or is not on that account): no retry brings it back, so the delivery must end rejected/resource_not_found",
      );
    }
    const after = await this.order(order.id);
    if (after.status !== 'awaiting_payment' || after.fulfillment !== null) {
      throw new Failed(`order ${order.id} is ${after.status} with fulfillment ${JSON.stringify(after.fulfillment)} after a notification of an object that does not exist`);
    }
    return `${this.what(delivery)} of ${payment.resourceId}, which the kit does not hold: ${describeAnswer(answer)}; ${asked.length} request(s) for ${path} answered 404 resource_missing; rejected/resource_not_found; order still awaiting_payment, no fulfillment`;
  }

  /**
   * Thin: the requests the kit's server saw, by path, against the notifications recorded so far:
   * exactly one per recorded notification naming an object the service reads, none for a
   * duplicate, a concurrent copy or a type the service does not act on, none at any other path.
   */
  private async fetchedOnce(): Promise<string> {
    const reading = [...this.recorded].filter((id) => this.objectPaths.has(id));
    // Each has ended its processing, so its read is done.
    for (const id of reading) await this.settled(id);
    const expected = new Map<string, number>();
    for (const id of reading) expected.set(this.objectPaths.get(id)!, (expected.get(this.objectPaths.get(id)!) ?? 0) + 1);
    const seen = this.o.objects!.byPath();
    const paths = [...new Set([...expected.keys(), ...seen.keys()])];
    const wrong = paths.filter((p) => (seen.get(p) ?? 0) !== (expected.get(p) ?? 0));
    if (wrong.length > 0) {
      const more = wrong.some((p) => (seen.get(p) ?? 0) > (expected.get(p) ?? 0));
      throw new Failed(
        wrong.map((p) => `${p}: ${seen.get(p) ?? 0} request(s) for ${expected.get(p) ?? 0} recorded notification(s)`).join('; '),
        more
          ? 'the service read an object more often than notifications name it: a processing retried after a failed read (GET /admin/webhook-deliveries/{id} shows its attempts), a read for a duplicate, or a read of an object no notification named'
          : 'a recorded notification was processed without reading its object from the kit: is the endpoint\'s apiBaseUrl the kit\'s --serve-objects address?',
      );
    }
    const requests = [...seen.values()].reduce((a, b) => a + b, 0);
    return `${reading.length} recorded notifications naming ${expected.size} objects: ${requests} requests at the kit, exactly one per notification; none for the duplicates, the concurrent copies or the notifications of types the service does not act on`;
  }

  private async reprocess(): Promise<string> {
    const paid = this.paid!;
    const rejected = this.rejected!;
    const beforePaid = await this.order(paid.order.id);
    const beforeRejected = await this.order(rejected.order.id);
    const paidRow = (await this.rows(paid.delivery.eventId))[0];
    for (const row of [paidRow, rejected.row]) {
      const answer = await this.http('POST', `/admin/webhook-deliveries/${row.id}/reprocess`);
      if (answer.status !== 202) throw new Failed(`POST /admin/webhook-deliveries/${row.id}/reprocess answered ${describeAnswer(answer)}, not 202`);
    }
    // The rejected delivery is opened again and processed anew: its new end shows the run happened.
    const again = await this.poll(`the reprocessed delivery ${rejected.row.id} to end again`, async () => {
      const [row] = await this.rows(rejected.row.eventId);
      return row && row.status !== 'received' && row.processedAt !== null && row.processedAt !== rejected.row.processedAt ? row : undefined;
    });
    if (again.status !== 'rejected' || again.outcome !== 'amount_mismatch') {
      throw new Failed(`the reprocessed underpayment ended ${again.status}/${again.outcome}, not rejected/amount_mismatch again`);
    }
    // A service may run a processed delivery again too (this one leaves it as it is): wait for its end.
    const paidAgain = await this.settled(paid.delivery.eventId);
    if (paidAgain.status !== 'processed' || !['applied', 'already_applied'].includes(paidAgain.outcome ?? '')) {
      throw new Failed(`the reprocessed paid delivery ended ${paidAgain.status}/${paidAgain.outcome}, not processed`);
    }
    const afterPaid = await this.order(paid.order.id);
    const afterRejected = await this.order(rejected.order.id);
    if (!isDeepStrictEqual(afterPaid, beforePaid)) throw new Failed(`order ${paid.order.id} changed on reprocess: ${diff(beforePaid, afterPaid)}`);
    if (!isDeepStrictEqual(afterRejected, beforeRejected)) {
      throw new Failed(`order ${rejected.order.id} changed on reprocess: ${diff(beforeRejected, afterRejected)}`);
    }
    return `both 202; the paid order keeps shipment ${afterPaid.fulfillment?.shipmentId} and is unchanged; the underpayment ran again, rejected/amount_mismatch, no shipment`;
  }

  private async reserialised(): Promise<string> {
    if (this.foreignAnswers) throw new NotRun("the webhook answers are not the service's (see signature)");
    // A refusal proves something only from a service that accepts a correctly signed body.
    if (!this.verified) throw new NotRun('no correctly signed delivery was accepted (see signature)');
    const payment = this.newPayment();
    const signed = this.signed('ignored', payment);
    const compact = JSON.stringify(JSON.parse(signed.body));
    const answer = await deliver({ ...signed, body: compact }, this.o.requestTimeoutMs);
    if (answer.status === 401 && answer.json?.error === 'invalid_signature') {
      const rows = await this.rows(signed.eventId);
      if (rows.length !== 0) throw new Failed(`401, yet the archive holds ${rows.length} deliveries of event ${signed.eventId}`);
      return `the signed body re-serialised (${signed.body.length} → ${compact.length} bytes): 401 invalid_signature, nothing recorded`;
    }
    throw new Failed(
      `a body re-serialised after signing answered ${describeAnswer(answer)}, not 401 invalid_signature`,
      answer.status >= 200 && answer.status < 300
        ? 'the service accepted bytes that do not match their signature: it does not check the signature over the raw body (or something in front of it answers): a forged body would pass'
        : 'a signature that does not match the bytes must answer 401 invalid_signature',
    );
  }

  /**
   * Adyen, in place of `reserialised`: one delivery of two items, the first as signed, the second
   * with amount.value changed after signing (a field its signature covers). The whole delivery must
   * be refused `401 invalid_signature`, and neither item recorded.
   */
  private async tampered(): Promise<string> {
    if (this.foreignAnswers) throw new NotRun("the webhook answers are not the service's (see signature)");
    if (!this.verified) throw new NotRun('no correctly signed delivery was accepted (see signature)');
    const signed = this.batch([this.event('succeeded', this.newPayment()), this.event('succeeded', this.newPayment())]);
    const body = JSON.parse(signed.body) as { notificationItems: Array<{ NotificationRequestItem: NotificationItem }> };
    const item = body.notificationItems[1].NotificationRequestItem;
    const amount = item.amount as { value: number; currency: string };
    const changed = amount.value + 1;
    item.amount = { ...amount, value: changed };
    const answer = await deliver({ ...signed, body: wireBody(body) }, this.o.requestTimeoutMs);
    if (answer.status === 401 && answer.json?.error === 'invalid_signature') {
      const recorded = (await Promise.all(signed.eventIds!.map((id) => this.rows(id)))).flat();
      if (recorded.length !== 0) throw new Failed(`401, yet the archive holds ${recorded.length} rows of the refused delivery's events`);
      return `2 items, the second's amount.value changed after signing (${amount.value} → ${changed}): 401 invalid_signature, neither item recorded`;
    }
    throw new Failed(
      `a delivery with an item's amount.value changed after signing answered ${describeAnswer(answer)}, not 401 invalid_signature`,
      answer.status >= 200 && answer.status < 300
        ? "the service accepted an item whose signed fields do not match its hmacSignature (or something in front of it answers): a forged amount would pass; and one item failing refuses the whole delivery"
        : 'an item whose signature does not match its fields must refuse the whole delivery 401 invalid_signature',
    );
  }

  private async reconciliation(): Promise<string> {
    const { delivery, payment, row, order } = this.paid!;
    const neverSentPsp = newResourceId(this.o.provider);
    const neverSent = this.adyen
      ? { eventId: adyenEventId({ pspReference: neverSentPsp, eventCode: 'AUTHORISATION', success: 'true' }), resourceId: neverSentPsp }
      : { eventId: this.thin ? thinEventId() : newEventId(this.o.provider), resourceId: neverSentPsp };
    const answer = await this.http('POST', '/admin/reconciliation', {
      provider: this.o.provider,
      merchantAccountId: row.merchantAccountId,
      eventIds: [delivery.eventId, neverSent.eventId],
      paidResourceIds: [payment.resourceId, neverSent.resourceId],
    });
    if (answer.status !== 200 || !answer.json) throw new Failed(`POST /admin/reconciliation answered ${describeAnswer(answer)}`);
    const report = answer.json as { missingEvents?: unknown; missingPaidPayments?: unknown; duplicateEffects?: unknown };
    const ours = [order.id, this.concurrentOrder?.id].filter(Boolean);
    const doubled = Array.isArray(report.duplicateEffects) ? report.duplicateEffects.filter((id) => ours.includes(id)) : [];
    if (!isDeepStrictEqual(report.missingEvents, [neverSent.eventId]) || !isDeepStrictEqual(report.missingPaidPayments, [neverSent.resourceId])) {
      throw new Failed(
        `missingEvents ${JSON.stringify(report.missingEvents)}, missingPaidPayments ${JSON.stringify(report.missingPaidPayments)}; expected exactly the never-sent ${neverSent.eventId} and ${neverSent.resourceId}`,
      );
    }
    if (doubled.length > 0) throw new Failed(`duplicateEffects names ${doubled.join(', ')}: more than one shipment for one order`);
    return `names the never-sent ${neverSent.eventId} and ${neverSent.resourceId} only; no duplicate effects for the orders paid here`;
  }

  // --- building blocks ----------------------------------------------------------------------

  private newPayment(orderId?: string): PaymentRef {
    return {
      resourceId: newResourceId(this.o.provider),
      orderId,
      amount: ORDER_AMOUNT,
      currency: CURRENCY,
      ...(this.o.merchant ? { account: this.o.merchant } : {}),
    };
  }

  private sign(eventId: string, body: string, timestamp?: number): Delivery {
    return signDelivery(this.o.provider, webhookUrl(this.o.url, this.o.endpoint), eventId, body, {
      secrets: this.o.secrets,
      timestamp,
      deliveryId: this.o.provider === 'factuarea' ? newEventId('factuarea') : undefined,
      notificationUrl: this.o.notificationUrl,
      paypalCertUrl: this.o.paypalCertUrl,
    });
  }

  /**
   * A signed event of `kind` about `payment`. Thin: its notification, whose object is put in the
   * kit's server first unless `serve` is false (the object is left as the server holds it, or
   * absent).
   */
  private signed(kind: EventKind, payment: PaymentRef, serve = true): Delivery {
    const event = this.built(kind, payment);
    if (this.thin && serve && event.served) this.o.objects!.put(event.served);
    return this.sign(event.eventId, wireBody(event.body));
  }

  /** The event in the endpoint's style (thin: the notification; the path of the object it names is kept). */
  private built(kind: EventKind, payment: PaymentRef): ThinEvent {
    if (!this.thin) return providerEvent(this.o.provider, kind, payment);
    const event = stripeEvent('thin', kind, payment);
    if (event.served) this.objectPaths.set(event.eventId, event.served.path);
    return event;
  }

  /** Thin: what to look at when a notification's processing did not end well, from what the kit's server saw. */
  private objectHint(eventId: string): () => string {
    return () => {
      const path = this.objectPaths.get(eventId) ?? '';
      const asked = this.o.objects!.requests.filter((r) => r.path === path);
      const where = this.o.objects!.url;
      if (asked.length === 0) {
        return `the service never asked the kit for ${path}: the endpoint's apiBaseUrl must be ${where}, reachable from the service; and are the workers running?`;
      }
      if (asked.every((r) => r.status === 401)) return `the kit refused the service's key ${asked.length} time(s) (401): the endpoint's apiKey is not the key in --stripe-api-key-file`;
      if (asked.some((r) => r.status === 404)) {
        return `the kit answered 404 for ${path}: was it asked in another account (Stripe-Context ${JSON.stringify(asked[0].account)})? --merchant is the notifications' context`;
      }
      return `the service read ${path} ${asked.length} time(s) (${asked.map((r) => r.status).join(', ')}): GET /admin/webhook-deliveries/{id} shows the last error`;
    };
  }

  /** Adyen: the unsigned items of an event (`providerEvent`'s body holds one). */
  private event(kind: EventKind, payment: PaymentRef): { items: NotificationItem[] } {
    return { items: itemsOf(providerEvent('adyen', kind, payment).body) };
  }

  /** Adyen: one delivery of these items, each signed on its own. */
  private batch(events: Array<{ items: NotificationItem[] }>): Delivery {
    const body = notificationBody(events.flatMap((e) => e.items));
    return this.sign('', JSON.stringify(body));
  }

  private async deliverExpecting(delivery: Delivery, word: 'accepted' | 'duplicate'): Promise<Answer> {
    const answer = await deliver(delivery, this.o.requestTimeoutMs);
    if (isAnswer(answer, 'accepted', delivery.eventId)) this.recorded.add(delivery.eventId);
    if (!this.answered(answer, word, delivery.eventId)) {
      throw new Failed(`${this.what(delivery)} ${delivery.eventId} answered ${describeAnswer(answer)}, not 200 ${this.adyen ? ADYEN_ACCEPTED : word}`);
    }
    return answer;
  }

  private async createOrder(): Promise<Order> {
    this.orders += 1;
    const answer = await this.http('POST', '/orders', {
      reference: `conformance-${this.run_}-${this.orders}`,
      amount: ORDER_AMOUNT,
      currency: CURRENCY,
      ...(this.o.carrier ? { carrier: this.o.carrier } : {}),
      shipTo: { name: 'Conformance Check', line1: '1 Test Street', city: 'Madrid', postalCode: '28001', country: 'ES' },
      items: [{ sku: 'CONFORMANCE-1', quantity: 1 }],
    });
    if (answer.status !== 201 || typeof answer.json?.id !== 'string') {
      const carrier = fieldsOf(answer).includes('carrier');
      throw new NotRun(
        `POST /orders answered ${describeAnswer(answer)}${answer.json?.details ? ` ${JSON.stringify(answer.json.details)}` : ''}`,
        carrier
          ? `--carrier "${this.o.carrier}" names no carrier the service has (CARRIERS)`
          : "the service refused the order the checks create (49.90 EUR, one item, a Madrid address): is it this contract's API?",
      );
    }
    return answer.json as unknown as Order;
  }

  private async registerPayment(order: Order): Promise<PaymentRef> {
    const payment = this.newPayment(order.id);
    const answer = await this.http('POST', `/orders/${order.id}/payments`, {
      provider: this.o.provider,
      providerPaymentId: payment.resourceId,
      ...(this.o.merchant ? { merchantAccountId: this.o.merchant } : {}),
    });
    if (answer.status !== 201) {
      const merchant = fieldsOf(answer).includes('merchantAccountId');
      throw new NotRun(
        `POST /orders/${order.id}/payments answered ${describeAnswer(answer)}${answer.json?.details ? ` ${JSON.stringify(answer.json.details)}` : ''}`,
        !merchant
          ? undefined
          : this.o.merchant
            ? `--merchant "${this.o.merchant}" is not an account of any ${this.o.provider} endpoint of the service (WEBHOOK_ENDPOINTS): pass the endpoint's merchant account`
            : `the service has ${this.o.provider} endpoints of several merchant accounts (or one of many): pass --merchant <account>`,
      );
    }
    return payment;
  }

  private async order(id: string): Promise<Order> {
    const answer = await this.http('GET', `/orders/${id}`);
    if (answer.status !== 200 || !answer.json) throw new Failed(`GET /orders/${id} answered ${describeAnswer(answer)}`);
    return answer.json as unknown as Order;
  }

  private async rows(eventId: string): Promise<ArchiveItem[]> {
    const answer = await this.http('GET', `/admin/webhook-deliveries?eventId=${encodeURIComponent(eventId)}&limit=100`);
    if (answer.status !== 200 || !Array.isArray(answer.json?.items)) {
      throw new Failed(`GET /admin/webhook-deliveries?eventId=${eventId} answered ${describeAnswer(answer)}`);
    }
    return (answer.json.items as ArchiveItem[]).filter((item) => item.eventId === eventId);
  }

  /** The delivery's row once its processing has ended (not `received`). */
  private settled(eventId: string, hint?: () => string): Promise<ArchiveItem> {
    return this.poll(`event ${eventId} to be processed`, async () => {
      const rows = await this.rows(eventId);
      if (rows.length > 1) throw new Failed(`the archive holds ${rows.length} deliveries of event ${eventId}, not 1`);
      return rows[0] && rows[0].status !== 'received' ? rows[0] : undefined;
    }, hint ?? 'the delivery is recorded but not processed: are the workers running (RUN_WORKERS=true somewhere, the same Redis and QUEUE_PREFIX)?');
  }

  private fulfilled(orderId: string): Promise<Order> {
    return this.poll(`order ${orderId} to be fulfilled`, async () => {
      const order = await this.order(orderId);
      return order.status === 'fulfilled' && order.fulfillment?.shipmentId ? order : undefined;
    }, 'the order is paid but not fulfilled: look at GET /admin/outbox (a carrier that refuses or does not answer: CARRIERS / CARRIER_URL)');
  }

  private async poll<T>(what: string, probe: () => Promise<T | undefined>, hint?: string | (() => string)): Promise<T> {
    const deadline = Date.now() + this.o.waitMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Failed(`waited ${Math.round(this.o.waitMs / 1000)} s for ${what}`, typeof hint === 'function' ? hint() : hint);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  private http(method: string, path: string, body?: unknown): Promise<Answer> {
    return send(
      joinUrl(this.o.url, path),
      {
        method,
        headers: { authorization: `Bearer ${this.o.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      },
      this.o.requestTimeoutMs,
    );
  }
}

/** `127.0.0.1:8443` of `https://127.0.0.1:8443/…`: what an endpoint's certHosts lists. */
function hostOf(url: string | undefined): string {
  try {
    return url ? new URL(url).host : 'the kit\'s host';
  } catch {
    return String(url);
  }
}

/** The fields a `400 validation_failed` names. */
function fieldsOf(answer: Answer): string[] {
  const details = answer.json?.details;
  return Array.isArray(details) ? details.map((d) => String((d as { field?: unknown })?.field)) : [];
}

/** The service's answer to a recorded delivery (accepted or duplicate), naming the event sent. */
function isAnswer(answer: Answer, word: 'accepted' | 'duplicate', eventId: string): boolean {
  return answer.status === 200 && answer.json?.status === word && answer.json?.eventId === eventId;
}

function isContractAnswer(answer: Answer): boolean {
  return answer.status === 200 && (answer.json?.status === 'accepted' || answer.json?.status === 'duplicate') && typeof answer.json?.eventId === 'string';
}

function tallyAnswers(answers: Answer[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(describeAnswer(a), (counts.get(describeAnswer(a)) ?? 0) + 1);
  return [...counts].map(([word, n]) => `${n} × ${word}`).join(', ');
}

/** The event type a body names: `type`, or (PayPal, Paddle) `event_type`. */
function eventTypeOf(delivery: Delivery): string {
  const body = JSON.parse(delivery.body) as { type?: unknown; event_type?: unknown };
  return String(body.type ?? body.event_type);
}

function hintFor(row: ArchiveItem): string | undefined {
  switch (row.outcome) {
    case 'account_mismatch':
      return "the account the body declares is not the endpoint's: pass --merchant with the endpoint's merchant account";
    case 'payment_not_found':
      return 'the service did not match the event to the order registered for it';
    default:
      return row.status === 'failed' ? 'processing failed: GET /admin/webhook-deliveries/{id} shows the last error' : undefined;
  }
}

function diff(before: Record<string, unknown>, after: Record<string, unknown>): string {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => !isDeepStrictEqual(before[k], after[k]));
  return keys.map((k) => `${k} ${truncate(JSON.stringify(before[k]))} → ${truncate(JSON.stringify(after[k]))}`).join('; ');
}

function truncate(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
