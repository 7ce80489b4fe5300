import { randomBytes, randomUUID } from 'node:crypto';
import {
  ADMIN_TOKEN_OPTION,
  parseBaseUrl,
  parseCommandArgs,
  readAdminToken,
  readPayloadStyle,
  readSecrets,
  requireOptions,
  SECRET_OPTIONS,
  secretsGiven,
  THIN_OPTIONS,
  type ThinServing,
  wholeNumber as wholeNumberOption,
} from './args';
import { CliCommand, CliExit, EXIT, RemoteEnv } from './context';
import { isSigningSecret } from '../providers/standard-keys';
import { deliver, type Delivery, describeWithCause, joinUrl, send, webhookUrl } from './remote/delivery';
import { adyenLibrary, isAdyenKey } from './remote/adyen';
import { REMOTE_PROVIDERS, type PayloadStyle, type RemoteProvider } from './remote/events';
import { PROVIDER_OPTIONS, readProviderSettings, startPaypalKit } from './remote/provider-options';
import type { PaypalCertServer } from '../testing/paypal';
import { type ObjectServer, serveObjects } from './remote/objects-server';
import {
  ORDER_AMOUNT,
  ORDER_CURRENCY,
  paymentCount,
  planRun,
  Progress,
  realClock,
  Simulation,
  SimulationReport,
  type EventRecord,
  type PlannedPayment,
} from './remote/simulation';
import { attemptsOf, formatDuration, SCHEDULE_NAMES, ScheduleName, SCHEDULES, seededRandom } from './remote/schedules';

const PROVIDERS: readonly RemoteProvider[] = REMOTE_PROVIDERS;

/** Why `--provider mollie` is refused, by simulate and conformance alike. */
export function mollieRefusal(command: string): string {
  return (
    `${command}: --provider mollie cannot be played: a Mollie delivery is an unsigned hint, authenticated by the service ` +
    "fetching the payment from Mollie's API, which no sender but Mollie can answer; see docs/going-live.md#mollie-check-it-with-mollie-itself"
  );
}

const USAGE = [
  `usage: payment-webhooks simulate --url <base URL> --endpoint <id> --provider ${REMOTE_PROVIDERS.join('|')}`,
  '         --secret-file <path> | --secret <s> [options]',
  '  Sends signed events to <base URL>/webhooks/<id> as the provider would, retries every failed delivery on the',
  "  provider's published schedule (shrunk by --time-scale), and prints what the service answered.",
  '  --url <base URL>         the service, with any route prefix (http://127.0.0.1:3000/pay)',
  '  --secret-file <path>     the secret, or one a line (a rotation: every one signs, one entry each, the first the',
  '                           current one); lines trimmed, blank lines and # comments skipped',
  '  --secret <s>             instead of --secret-file, repeatable; ps shows it to every user of the machine',
  '                           standard: a whsec_ signs v1, a whsk_ (ed25519 private key) v1a; both may sign at once',
  "                           adyen: the endpoint's hex HMAC key; each item carries one signature, by the first key",
  '                           (Adyen signs with its current key only); signed with the official @adyen/api-library',
  "                           paypal: the endpoint's webhookId (the kit signs with its own key: --paypal-cert-port);",
  "                           checkout, square: the webhook's signature key (one); paddle: the destination's secret key",
  '                           (pdl_ntfset_…; several sign at once, as during a rotation)',
  "  --events N               distinct events (default 10), in the provider's payment lifecycles (Factuarea: created,",
  '                           sent, paid); the last payment may lack its first steps, every payment ends paid',
  '  --duplicates <0..1>      share of events the provider sends again on its own once acknowledged (default 0);',
  '                           re-signed, the answer must be `duplicate`',
  "  --copies <k>             each event's first attempt goes as k concurrent copies (default 1; at most --concurrency)",
  '  --out-of-order <0..1>    share of payment lifecycles sent last event first (default 0)',
  '  --concurrency C          requests in flight at once (default 8); waiting retries hold none',
  '  --batch N                adyen: events one delivery carries (default 1, at most 100), as Adyen batches them;',
  '                           a delivery is retried, and sent again, as a whole',
  "  --schedule <name>        another provider's schedule, one of those below (default: the provider's own)",
  '  --time-scale X           divides every wait between attempts by X (default 1, real time; 120 makes 1 min 0.5 s)',
  '  --timeout <ms>           per request, not scaled (default 10000)',
  '  --merchant <account>     the account the bodies declare (not paymos, checkout, paddle: their bodies declare none;',
  "                           square: required, the merchant_id, the endpoint's account; paypal: payee.merchant_id;",
  '                           an endpoint of many accounts needs one;',
  "                           adyen: required, the merchantAccountCode, the endpoint's merchantAccountId;",
  '                           stripe thin: the notifications\' context, the connected account)',
  '  --payload-style <style>  stripe: snapshot (default; events carry the object) or thin: the thin twin of each',
  '                           event (type v1.<type>, a fresh evt_test_ id, related_object naming the object), for an',
  '                           endpoint with "payloadStyle": "thin"',
  '  --notification-url <url> square: the endpoint\'s notificationUrl exactly, which Square signs before the body',
  '                           (default <url>/webhooks/<endpoint> when that is https); square needs --merchant too',
  '  --paypal-cert-port <n>   paypal: the kit serves its signing certificate on https://127.0.0.1:<n> (default a free',
  '                           port, printed on stderr); the endpoint lists "certHosts": ["127.0.0.1:<n>"] and "caFile":',
  "                           a file of the kit's CA (payment-webhooks paypal-test-ca); the service runs on this machine",
  '  --serve-objects <host:port>',
  '                           with thin, required: for the run, serves GET /v1/payment_intents|charges|disputes/{id}',
  "                           there (404 resource_missing otherwise), the object each notification names put in before",
  "                           it is sent (a later step's state is kept); the endpoint's apiBaseUrl is http://<host:port>",
  '  --stripe-api-key-file <path>',
  "                           with thin: the endpoint's apiKey, which each read must carry as its bearer (default: any",
  '                           bearer is accepted); never printed',
  "  --admin-token <t>        create one order per payment first (POST /orders), so the events pay real orders;",
  '                           without it the events name random order ids and end `unmatched`; with it, the run',
  '                           ends by checking that every order was fulfilled (within --wait seconds, default 30).',
  '                           With thin, the objects stay served until each acknowledged notification\'s was read',
  '                           (within --wait seconds, which thin allows without the admin token).',
  '                           Absent: ADMIN_TOKEN from the environment, which ps does not show (empty: no token)',
  '  --admin-url <base URL>   where the orders are created (default --url; needs the admin token)',
  '  --seed <n>               reproducible jitter and picks (default random, printed)',
  '  --json                   the summary as JSON on stdout',
  '  mollie is refused: its deliveries are authenticated by fetching the payment from Mollie\'s API.',
  '  Schedules:',
  ...SCHEDULE_NAMES.map((name) => `    ${name.padEnd(10)} ${SCHEDULES[name].describe}`),
  '  Progress goes to stderr. Exit 0 every event acknowledged by the service (200 accepted or duplicate; adyen: 2xx',
  '  [accepted], the same for a delivery recorded before, so with the admin token each event must be in the archive',
  '  exactly once), none accepted twice and, with the admin token, every order fulfilled; 1 a delivery gave up',
  "  (schedule exhausted, or an answer the schedule does not retry), a 2xx that is not the service's answer, an order",
  '  not fulfilled, an event not in the archive exactly once (adyen), or an interrupted run (Ctrl-C, SIGTERM: the',
  '  summary is printed); 2 could not run.',
].join('\n');

/** The simulator checks a receiver's behaviour; `npm run bench` measures its throughput. */
const MAX_EVENTS = 100_000;

// ---------------------------------------------------------------------------------------------
// Options

export interface SimulateOptions {
  url: string;
  endpoint: string;
  provider: RemoteProvider;
  secrets: string[];
  events: number;
  /** Adyen: events a delivery carries. */
  batch: number;
  duplicates: number;
  copies: number;
  outOfOrder: number;
  concurrency: number;
  schedule: ScheduleName;
  timeScale: number;
  timeoutMs: number;
  merchant?: string;
  adminToken?: string;
  adminUrl: string;
  /** With --admin-token: how long the orders may take to be fulfilled once every event is acknowledged. */
  waitMs: number;
  seed: number;
  json: boolean;
  /** Stripe: `thin` sends notifications, their objects served at `serving`. */
  payloadStyle: PayloadStyle;
  serving?: ThinServing;
  /** Square: the endpoint's notificationUrl, signed before the body. */
  notificationUrl?: string;
  /** PayPal: the port of the kit's certificate server on 127.0.0.1 (0: a free one). */
  paypalCertPort?: number;
}

function usageError(message: string): never {
  throw new CliExit(EXIT.couldNotRun, `simulate: ${message}`);
}

function wholeNumber(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  return wholeNumberOption('simulate', name, value, fallback, min, max);
}

/** A decimal number written plainly (`0.25`, `120`, `.5`). */
function decimal(value: string): number {
  return /^(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : NaN;
}

function ratio(name: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const n = decimal(value);
  if (!(n >= 0 && n <= 1)) usageError(`--${name} must be a ratio from 0 to 1, got "${value}"`);
  return n;
}

/** As given (the summary prints it as typed), once checked. */
function baseUrl(name: string, value: string, endpoint?: string): string {
  parseBaseUrl('simulate', name, value, endpoint);
  return value;
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) usageError(`--${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

/**
 * The command line (and ADMIN_TOKEN when --admin-token is absent), validated; anything wrong ends
 * the command with exit 2 and one line (never a secret's or the token's value).
 */
export function parseSimulateArgs(args: string[], env: RemoteEnv = {}): SimulateOptions {
  const v = parseCommandArgs('simulate', USAGE, args, {
    url: { type: 'string' },
    endpoint: { type: 'string' },
    provider: { type: 'string' },
    ...SECRET_OPTIONS,
    events: { type: 'string' },
    batch: { type: 'string' },
    duplicates: { type: 'string' },
    copies: { type: 'string' },
    'out-of-order': { type: 'string' },
    concurrency: { type: 'string' },
    schedule: { type: 'string' },
    'time-scale': { type: 'string' },
    timeout: { type: 'string' },
    merchant: { type: 'string' },
    ...ADMIN_TOKEN_OPTION,
    'admin-url': { type: 'string' },
    wait: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
    ...THIN_OPTIONS,
    ...PROVIDER_OPTIONS,
  });
  requireOptions('simulate', USAGE, v, ['url', 'endpoint', 'provider', secretsGiven(v)]);
  const adminToken = readAdminToken('simulate', v['admin-token'], env);
  if (v.provider === 'mollie') throw new CliExit(EXIT.couldNotRun, mollieRefusal('simulate'));
  const provider = oneOf('provider', v.provider!, PROVIDERS);
  const { style: payloadStyle, serving } = readPayloadStyle('simulate', v, provider);
  if (v.wait !== undefined && adminToken === undefined && payloadStyle !== 'thin') {
    const thin = provider === 'stripe' ? ', or --payload-style thin (the wait for the objects to be read)' : '';
    usageError(`--wait needs --admin-token or ADMIN_TOKEN (it bounds the wait for the orders)${thin}`);
  }
  const secrets = readSecrets('simulate', v)!;
  if (provider === 'standard' && !secrets.every(isSigningSecret)) {
    const which = v['secret-file'] === undefined ? '--secret of a standard endpoint' : '--secret-file: each secret of a standard endpoint';
    usageError(`${which} must be whsec_ or whsk_ followed by base64 (Standard Webhooks signs with the decoded key: whsec_ v1, whsk_ v1a)`);
  }
  if ((provider === 'paymos' || provider === 'checkout' || provider === 'paddle') && v.merchant !== undefined) {
    usageError(`--merchant does not apply to ${provider}: its bodies declare no account`);
  }
  const settings = readProviderSettings('simulate', provider, v, secrets, v.url!, v.endpoint!);
  if (v.merchant === '') usageError('--merchant must not be empty');
  if (provider === 'adyen') {
    if (!secrets.every(isAdyenKey)) {
      const which = v['secret-file'] === undefined ? '--secret of an adyen endpoint' : '--secret-file: each secret of an adyen endpoint';
      usageError(`${which} must be the hex HMAC key the Customer Area shows (an even number of hex digits)`);
    }
    if (v.merchant === undefined) usageError("--provider adyen needs --merchant <merchantAccountCode>: every item declares its merchant account (the endpoint's merchantAccountId)");
  }
  if (v.batch !== undefined && provider !== 'adyen') usageError('--batch applies to adyen only: the other providers send one event a delivery');
  if (v['admin-url'] !== undefined && adminToken === undefined) usageError('--admin-url needs --admin-token or ADMIN_TOKEN');

  const concurrency = wholeNumber('concurrency', v.concurrency, 8, 1, 10_000);
  const copies = wholeNumber('copies', v.copies, 1, 1, 10_000);
  if (copies > concurrency) usageError(`--copies (${copies}) must not exceed --concurrency (${concurrency}): the copies are sent at once`);
  const timeScale = v['time-scale'] === undefined ? 1 : decimal(v['time-scale']);
  if (!(timeScale > 0 && Number.isFinite(timeScale))) usageError(`--time-scale must be a positive number, got "${v['time-scale']}"`);
  // Loaded now, so that a missing package ends the command before anything is sent.
  if (provider === 'adyen') adyenLibrary('simulate');

  return {
    url: baseUrl('url', v.url!, v.endpoint!),
    endpoint: v.endpoint!,
    provider,
    secrets,
    // Every body is built before the first is sent: a bound that keeps the plan within memory.
    events: wholeNumber('events', v.events, 10, 1, MAX_EVENTS),
    batch: wholeNumber('batch', v.batch, 1, 1, 100),
    duplicates: ratio('duplicates', v.duplicates),
    copies,
    outOfOrder: ratio('out-of-order', v['out-of-order']),
    concurrency,
    schedule: v.schedule === undefined ? provider : oneOf('schedule', v.schedule, SCHEDULE_NAMES),
    timeScale,
    timeoutMs: wholeNumber('timeout', v.timeout, 10_000, 1, 2_147_483_647),
    merchant: v.merchant,
    adminToken,
    adminUrl: baseUrl('admin-url', v['admin-url'] ?? v.url!),
    waitMs: wholeNumber('wait', v.wait, 30, 1, 3600) * 1000,
    seed: wholeNumber('seed', v.seed, randomBytes(4).readUInt32BE(0), 0, 4_294_967_295),
    json: v.json ?? false,
    payloadStyle,
    ...(serving ? { serving } : {}),
    ...settings,
  };
}

// ---------------------------------------------------------------------------------------------
// What is printed

export interface Totals {
  events: number;
  sent: number;
  /** Events that got at least one `accepted` (Adyen: a 2xx `[accepted]`, its answer to a new and to a recorded delivery alike). */
  accepted: number;
  /** Events that got `accepted` more than once: a service bug (one event id is accepted once). */
  acceptedMoreThanOnce: number;
  /** Acknowledged, never `accepted`, only `duplicate` (the service had the event already, e.g. from a request that timed out here). */
  duplicateOnly: number;
  /** Acknowledged with a 2xx that was neither `accepted` nor `duplicate`. */
  acknowledgedOtherwise: number;
  gaveUp: number;
  /** Not sent, or still retrying, when the run was interrupted. */
  unfinished: number;
  requests: number;
  attempts: number;
  retries: number;
  redeliveries: number;
  giveUps: number;
}

export function totals(report: SimulationReport): Totals {
  const accepted = (e: EventRecord) => e.accepted + (e.acceptedText ?? 0);
  const acked = report.events.filter((e) => accepted(e) + e.duplicate + e.otherAcknowledged > 0);
  return {
    events: report.events.length,
    sent: report.events.filter((e) => e.state !== 'not_sent').length,
    accepted: report.events.filter((e) => accepted(e) > 0).length,
    // Adyen's `[accepted]` does not say whether the delivery was new: the archive check judges that.
    acceptedMoreThanOnce: report.events.filter((e) => e.accepted > 1).length,
    duplicateOnly: acked.filter((e) => accepted(e) === 0 && e.duplicate > 0).length,
    acknowledgedOtherwise: acked.filter((e) => accepted(e) === 0 && e.duplicate === 0).length,
    gaveUp: report.events.filter((e) => e.state === 'gave_up').length,
    unfinished: report.events.filter((e) => e.state === 'not_sent' || e.state === 'interrupted' || e.state === 'pending').length,
    requests: report.requests,
    attempts: report.attempts,
    retries: report.retries,
    redeliveries: report.redeliveries,
    giveUps: report.giveUps.length,
  };
}

/** Why the run failed, in one line; undefined when it succeeded (every delivery answered 2xx, none accepted twice). */
export function failure(report: SimulationReport, orders?: OrdersCheck, archive?: ArchiveCheck): string | undefined {
  const t = totals(report);
  const reasons: string[] = [];
  if (t.acknowledgedOtherwise > 0) {
    reasons.push(
      `${t.acknowledgedOtherwise} event(s) acknowledged with a 2xx that is not the service's answer (neither accepted nor duplicate): ` +
        'something in front of the service answers for it, and a provider would never send those events again',
    );
  }
  if (t.acceptedMoreThanOnce > 0) reasons.push(`the service answered accepted more than once for ${t.acceptedMoreThanOnce} event(s): a broken deduplication`);
  if (t.giveUps > 0) {
    const byAnswer = new Map<string, number>();
    for (const g of report.giveUps) byAnswer.set(g.lastAnswer, (byAnswer.get(g.lastAnswer) ?? 0) + 1);
    const answers = [...byAnswer].map(([answer, n]) => `${n}× ${answer}`).join(', ');
    reasons.push(`${t.giveUps} deliver${t.giveUps === 1 ? 'y' : 'ies'} gave up (${answers})`);
  }
  if (report.interrupted) reasons.push(`interrupted with ${t.unfinished} of ${t.events} events unfinished`);
  if (orders && orders.fulfilled < orders.total) {
    const first = orders.notFulfilled[0];
    reasons.push(
      `${orders.total - orders.fulfilled} of ${orders.total} orders not fulfilled within ${Math.round(orders.waitedMs / 1000)} s ` +
        `(order ${first.id} is ${first.status}): look at the archive, GET /admin/webhook-deliveries?status=rejected or ?status=unmatched`,
    );
  }
  if (archive && archive.recordedOnce < archive.total) {
    const parts = [
      archive.missing.length ? `${archive.missing.length} acknowledged but not in the archive (${archive.missing[0]}: something in front of the service answers for it, or the answer was lost)` : '',
      archive.many.length ? `${archive.many.length} recorded more than once (${archive.many[0].eventId}: ${archive.many[0].rows} rows, a broken deduplication)` : '',
      archive.unreadable ? `the archive could not be read (${archive.unreadable})` : '',
    ].filter(Boolean);
    reasons.push(`${archive.total - archive.recordedOnce} of ${archive.total} events not recorded exactly once: ${parts.join(', ')}`);
  }
  return reasons.length ? `simulate: ${reasons.join('; ')}` : undefined;
}

export interface RunInfo {
  provider: RemoteProvider;
  endpoint: string;
  url: string;
  schedule: ScheduleName;
  timeScale: number;
  seed: number;
  copies: number;
  concurrency: number;
  orders: string[];
  /** Stripe thin only: the style, and where the objects were served. */
  payloadStyle?: 'thin';
  objectsUrl?: string;
}

/** Stripe thin: whether the service read the object of each notification it acknowledged, at the kit's server. */
export interface ObjectsCheck {
  url: string;
  /** Acknowledged notifications that name an object the service reads. */
  notifications: number;
  /** Requests the server answered, and by answer (`{ "200": 10 }`). */
  requests: number;
  answers: Record<string, number>;
  /** Objects asked for fewer times than notifications name them, when the wait ended. */
  unread: string[];
  /**
   * With the admin token: acknowledged notifications, every object read, that the service was still
   * processing (`received`, e.g. a retry waiting for its payment) when the wait ended. The kit
   * serves until none is left, so a retry never finds the server gone.
   */
  pending?: string[];
  waitedMs: number;
}

/** The summary table: answers by status, retries, give-ups, and the accepted counts the idempotency check rests on. */
export function formatSummary(run: RunInfo, report: SimulationReport, orders?: OrdersCheck, archive?: ArchiveCheck, objects?: ObjectsCheck): string[] {
  const t = totals(report);
  const s = SCHEDULES[run.schedule];
  const lines = [
    `simulate ${run.provider}${run.payloadStyle === 'thin' ? ' (thin notifications)' : ''} → ${webhookUrl(run.url, run.endpoint)}`,
    `schedule ${run.schedule} (${attemptsOf(s)} attempts), time scale ${run.timeScale}, seed ${run.seed}, concurrency ${run.concurrency}, copies ${run.copies}`,
  ];
  if (run.orders.length) lines.push(`orders created: ${run.orders.length}`);
  lines.push(
    run.provider === 'adyen'
      ? `events: ${t.sent} sent of ${t.events}, ${t.accepted} accepted (2xx [accepted]), ${t.acknowledgedOtherwise} acknowledged otherwise, ${t.gaveUp} gave up${t.unfinished ? `, ${t.unfinished} unfinished` : ''}`
      : `events: ${t.sent} sent of ${t.events}, ${t.accepted} accepted, ${t.duplicateOnly} acknowledged as duplicate only, ${t.acknowledgedOtherwise} acknowledged otherwise, ${t.gaveUp} gave up${t.unfinished ? `, ${t.unfinished} unfinished` : ''}`,
    run.provider === 'adyen'
      ? archive
        ? `recorded once (archive): ${archive.recordedOnce}/${archive.total}${archive.many.length ? '  <- SERVICE BUG: an event id must be recorded once' : ''}`
        : 'accepted more than once: not told by Adyen\'s answer ([accepted] for a new and a recorded delivery alike); with the admin token the archive is checked'
      : `accepted more than once: ${t.acceptedMoreThanOnce}${t.acceptedMoreThanOnce ? '  <- SERVICE BUG: an event id must be accepted once' : ''}`,
    `requests: ${t.requests} (${t.attempts} attempts, ${t.retries} retries, ${t.redeliveries} redeliveries${t.requests > t.attempts ? `, ${t.requests - t.attempts} extra concurrent copies` : ''})`,
    'answers:',
    ...Object.entries(report.answers).map(([answer, n]) => `  ${answer}: ${n}`),
    `give-ups: ${t.giveUps}`,
    ...report.giveUps.map(
      (g) =>
        `  gave up: ${g.eventId} (${g.type}${g.delivery === 'redelivery' ? ', redelivery' : ''}${g.alsoLost ? `, and ${g.alsoLost.length} more of its delivery` : ''})` +
        ` after ${g.attempts} attempt(s): ${g.lastAnswer}${g.reason === 'not_retried' ? ' (not retried)' : ''}`,
    ),
    ...report.events.filter((e) => e.accepted > 1).map((e) => `  accepted ${e.accepted} times: ${e.eventId} (${e.type})`),
    ...(orders
      ? [
          `orders fulfilled: ${orders.fulfilled}/${orders.total}`,
          ...orders.notFulfilled.slice(0, 10).map((o) => `  not fulfilled: order ${o.id} is ${o.status}`),
        ]
      : []),
    ...(objects ? formatObjects(objects) : []),
    `took ${formatDuration(report.durationMs)}`,
  );
  return lines;
}

/** The objects line of a thin run: what was served, and what the service had not read when the wait ended. */
export function formatObjects(objects: ObjectsCheck): string[] {
  const answers = Object.entries(objects.answers).map(([status, n]) => `${status}: ${n}`).join(', ');
  return [
    `objects served at ${objects.url}: ${objects.requests} request(s)${answers ? ` (${answers})` : ''} for ${objects.notifications} acknowledged notification(s) naming one` +
      (objects.unread.length ? `; ${objects.unread.length} object(s) not read within ${formatDuration(objects.waitedMs)}` : '; each object read') +
      (objects.pending?.length ? `; ${objects.pending.length} notification(s) still being processed after ${formatDuration(objects.waitedMs)}` : ''),
    ...objects.unread.slice(0, 10).map((path) => `  not read: ${path}`),
    ...(objects.pending ?? []).slice(0, 10).map((eventId) => `  still processing: ${eventId}`),
  ];
}

export function summaryJson(run: RunInfo, report: SimulationReport, orders?: OrdersCheck, archive?: ArchiveCheck, objects?: ObjectsCheck): Record<string, unknown> {
  const why = failure(report, orders, archive);
  return {
    ok: why === undefined,
    ...(why ? { failure: why } : {}),
    ...(orders ? { ordersFulfilled: { fulfilled: orders.fulfilled, total: orders.total, notFulfilled: orders.notFulfilled } } : {}),
    ...(archive ? { recordedOnce: archive } : {}),
    ...(objects ? { objects } : {}),
    run: { ...run, orders: undefined },
    totals: totals(report),
    answers: report.answers,
    giveUps: report.giveUps,
    orders: run.orders,
    events: report.events,
    interrupted: report.interrupted,
    durationMs: Math.round(report.durationMs),
  };
}

export function formatProgress(p: Progress): string {
  return (
    `simulate: ${p.acknowledged}/${p.events} events acknowledged, ${p.gaveUp} gave up, ${p.sent - p.acknowledged - p.gaveUp} pending` +
    ` (${p.waiting} waiting to retry, ${p.inFlight} in flight)${p.toRedeliver ? `, ${p.toRedeliver} to be sent again` : ''}` +
    `, ${p.requests} requests, ${formatDuration(p.elapsedMs)}` +
    (p.requests ? `; ${Object.entries(p.answers).map(([answer, n]) => `${answer}: ${n}`).join(', ')}` : '')
  );
}

/**
 * The progress line on stderr: on a terminal redrawn in place at most once a second; otherwise
 * (a log, CI) a plain line every 5 s, so a log is not flooded.
 */
export class ProgressLine {
  private last: number;
  private drawn = false;

  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    private readonly now: () => number,
  ) {
    this.last = now();
  }

  tick(text: string): void {
    const now = this.now();
    if (now - this.last < (this.tty ? 1_000 : 5_000)) return;
    this.last = now;
    this.drawn = true;
    this.write(this.tty ? `\r\x1b[K${text}` : `${text}\n`);
  }

  /** Clears a line drawn in place, so the summary starts on a clean line. */
  end(): void {
    if (this.tty && this.drawn) this.write('\r\x1b[K');
  }
}

// ---------------------------------------------------------------------------------------------
// Orders

const SHIP_TO = { name: 'Simulated Buyer', line1: '1 Test Street', city: 'Madrid', postalCode: '28001', country: 'ES' };

/** With --admin-token: whether the orders the events paid were fulfilled (what the run is for). */
export interface OrdersCheck {
  total: number;
  fulfilled: number;
  notFulfilled: Array<{ id: string; status: string }>;
  waitedMs: number;
}

/**
 * Polls the orders (GET /orders/{id}) until each is fulfilled or `waitMs` has passed. Every event
 * was acknowledged; processing and the carrier follow off the request, so they get a while.
 */
async function checkOrders(options: SimulateOptions, ids: string[], stopped: () => boolean): Promise<OrdersCheck> {
  const started = Date.now();
  const status = new Map<string, string>(ids.map((id) => [id, 'unknown']));
  for (;;) {
    const open = ids.filter((id) => status.get(id) !== 'fulfilled');
    for (let i = 0; i < open.length; i += options.concurrency) {
      await Promise.all(
        open.slice(i, i + options.concurrency).map(async (id) => {
          const answer = await send(joinUrl(options.adminUrl, `/orders/${id}`), { method: 'GET', headers: { authorization: `Bearer ${options.adminToken}` } }, options.timeoutMs);
          status.set(id, typeof answer.json?.status === 'string' ? answer.json.status : describeWithCause(answer));
        }),
      );
    }
    const notFulfilled = ids.filter((id) => status.get(id) !== 'fulfilled').map((id) => ({ id, status: status.get(id)! }));
    const waitedMs = Date.now() - started;
    if (notFulfilled.length === 0 || waitedMs >= options.waitMs || stopped()) {
      return { total: ids.length, fulfilled: ids.length - notFulfilled.length, notFulfilled, waitedMs };
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Adyen, with the admin token: whether each acknowledged event is in the archive exactly once (its answer cannot say). */
export interface ArchiveCheck {
  total: number;
  recordedOnce: number;
  /** Acknowledged, yet no row holds them. */
  missing: string[];
  many: Array<{ eventId: string; rows: number }>;
  /** Why the archive could not be read, when it could not. */
  unreadable?: string;
}

/** The archive's rows of each event id of the endpoint: one GET /admin/webhook-deliveries?eventId= per event, `concurrency` at a time. */
async function archivedRows(options: SimulateOptions, eventIds: string[]): Promise<{ rows: Map<string, Array<{ status?: unknown }>>; unreadable?: string }> {
  const rows = new Map<string, Array<{ status?: unknown }>>();
  let unreadable: string | undefined;
  for (let i = 0; i < eventIds.length && !unreadable; i += options.concurrency) {
    await Promise.all(
      eventIds.slice(i, i + options.concurrency).map(async (eventId) => {
        const path = `/admin/webhook-deliveries?endpointId=${encodeURIComponent(options.endpoint)}&eventId=${encodeURIComponent(eventId)}&limit=100`;
        const answer = await send(joinUrl(options.adminUrl, path), { method: 'GET', headers: { authorization: `Bearer ${options.adminToken}` } }, options.timeoutMs);
        const items = answer.json?.items;
        if (answer.status !== 200 || !Array.isArray(items)) {
          unreadable ??= `GET /admin/webhook-deliveries answered ${describeWithCause(answer)}`;
          return;
        }
        rows.set(eventId, items.filter((item) => (item as { eventId?: unknown })?.eventId === eventId) as Array<{ status?: unknown }>);
      }),
    );
  }
  return { rows, ...(unreadable ? { unreadable } : {}) };
}

/** Adyen: whether each acknowledged event is in the archive exactly once. */
async function checkArchive(options: SimulateOptions, eventIds: string[]): Promise<ArchiveCheck> {
  const { rows, unreadable } = await archivedRows(options, eventIds);
  const check: ArchiveCheck = { total: eventIds.length, recordedOnce: 0, missing: [], many: [], ...(unreadable ? { unreadable } : {}) };
  if (unreadable) return check;
  for (const eventId of eventIds) {
    const n = rows.get(eventId)!.length;
    if (n === 1) check.recordedOnce += 1;
    else if (n === 0) check.missing.push(eventId);
    else check.many.push({ eventId, rows: n });
  }
  return check;
}

/**
 * Stripe thin: keeps serving until the service has asked for the object of every notification it
 * acknowledged (as many requests at each path as notifications name it) and, given `processing`
 * (which of these event ids the service is still processing), until none is left, or `waitMs` has
 * passed. Processing reads the object after the answer, and a retried processing reads it again,
 * so closing the server at once would fail them.
 */
export async function awaitObjectReads(
  server: Pick<ObjectServer, 'fetches' | 'requests' | 'byStatus' | 'url'>,
  payments: PlannedPayment[],
  report: SimulationReport,
  waitMs: number,
  stopped: () => boolean,
  processing?: (eventIds: string[]) => Promise<string[]>,
): Promise<ObjectsCheck> {
  const acknowledged = new Set(report.events.filter((e) => e.accepted + e.duplicate > 0).map((e) => e.eventId));
  const notified = payments.flatMap((p) => p.events.filter((e) => e.served && acknowledged.has(e.eventId)));
  const expected = new Map<string, number>();
  for (const e of notified) expected.set(e.served!.path, (expected.get(e.served!.path) ?? 0) + 1);
  const started = Date.now();
  // Asked of the archive once every object has been read; then only what it still said pending.
  let pending: string[] | undefined;
  for (;;) {
    const unread = [...expected].filter(([path, n]) => server.fetches(path) < n).map(([path]) => path);
    if (processing && unread.length === 0 && pending?.length !== 0) pending = await processing(pending ?? notified.map((e) => e.eventId));
    const waitedMs = Date.now() - started;
    if ((unread.length === 0 && (!processing || pending?.length === 0)) || waitedMs >= waitMs || stopped()) {
      return {
        url: server.url,
        notifications: notified.length,
        requests: server.requests.length,
        answers: server.byStatus(),
        unread,
        ...(processing ? { pending: pending ?? [] } : {}),
        waitedMs,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Which of these event ids of the endpoint the service is still processing (a delivery row
 * `received`, or none yet). An archive that cannot be read counts as nothing pending: the wait is
 * a courtesy, not a check.
 */
async function stillProcessing(options: SimulateOptions, eventIds: string[]): Promise<string[]> {
  const { rows, unreadable } = await archivedRows(options, eventIds);
  if (unreadable) return [];
  return eventIds.filter((eventId) => {
    const own = rows.get(eventId)!;
    return own.length === 0 || own.some((row) => row.status === 'received');
  });
}

/**
 * One order per payment, through the host API, so the events pay real orders. Each request
 * carries its reference as Idempotency-Key. Any answer but 201 ends the command (exit 2): the run
 * would test nothing it means to.
 */
async function createOrders(options: SimulateOptions, count: number, run: string): Promise<string[]> {
  const url = joinUrl(options.adminUrl, '/orders');
  const ids: string[] = new Array(count);
  let next = 0;
  let failed: string | undefined;
  const worker = async () => {
    while (next < count && failed === undefined) {
      const n = next++;
      const reference = `simulate-${run}-${n + 1}`;
      const body = JSON.stringify({ reference, amount: ORDER_AMOUNT, currency: ORDER_CURRENCY, shipTo: SHIP_TO, items: [{ sku: 'SIM-1', quantity: 1 }] });
      const headers = { authorization: `Bearer ${options.adminToken}`, 'content-type': 'application/json', 'idempotency-key': reference };
      const answer = await send(url, { method: 'POST', headers, body }, options.timeoutMs);
      const id = answer.json?.id;
      if (answer.status === 201 && typeof id === 'string') ids[n] = id;
      else failed ??= describeWithCause(answer);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, count) }, worker));
  if (failed !== undefined) {
    const made = ids.filter(Boolean).length;
    throw new CliExit(EXIT.couldNotRun, `simulate: POST ${url} answered ${failed}; ${made} of ${count} orders created, no event sent`);
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------

/**
 * `payment-webhooks simulate`: plays a provider against a running service, over
 * HTTP only (of the environment, ADMIN_TOKEN only), so an operator can watch the receiver take duplicates,
 * concurrent copies, out-of-order lifecycles, a secret rotation in flight and the provider's own
 * retry schedule, and see by the counts that every event was accepted exactly once.
 */
export const simulateCommand: CliCommand = {
  summary: 'send signed events as the provider would, retrying on its schedule',
  usage: USAGE,
  environment: false,
  async run(ctx) {
    const options = parseSimulateArgs(ctx.args, ctx.remoteEnv);
    const random = seededRandom(options.seed);
    const count = paymentCount(options.provider, options.events);
    const run = randomUUID().slice(0, 8);

    // Listening first: an address that cannot be served ends the command before anything is created or sent.
    const objects = options.serving ? await serveObjects('simulate', options.serving.address, options.serving.apiKey) : undefined;
    let paypal: PaypalCertServer | undefined;
    try {
      if (options.paypalCertPort !== undefined) paypal = await startPaypalKit('simulate', options.paypalCertPort, (line) => process.stderr.write(`${line}\n`));
    } catch (err) {
      await objects?.close();
      throw err;
    }

    // The first Ctrl-C stops and prints what was answered so far; a second one ends the process at
    // once. SIGTERM (what a CI job's timeout sends) does the same, so its log keeps the summary.
    const stop = { requested: false, simulation: undefined as Simulation | undefined };
    const onInterrupt = () => {
      stop.requested = true;
      stop.simulation?.interrupt();
    };
    process.once('SIGINT', onInterrupt);
    process.once('SIGTERM', onInterrupt);
    try {
      const orderIds = options.adminToken ? await createOrders(options, count, run) : undefined;
      if (stop.requested) throw new CliExit(EXIT.failure, 'simulate: interrupted before any event was sent');
      const payments = planRun({ ...options, orderIds }, random);
      // Thin: each notification's object goes in the server before the notification is sent (every attempt: a no-op once held).
      const served = new Map(payments.flatMap((p) => p.events.flatMap((e) => (e.served ? [[e.eventId, e.served] as const] : []))));
      const transport = (d: Delivery) => {
        const object = served.get(d.eventId);
        if (objects && object) objects.put(object, object.rank);
        return deliver(d, options.timeoutMs);
      };

      const simulation = new Simulation(
        {
          provider: options.provider,
          url: webhookUrl(options.url, options.endpoint),
          secrets: options.secrets,
          schedule: SCHEDULES[options.schedule],
          timeScale: options.timeScale,
          copies: options.copies,
          concurrency: options.concurrency,
          payments,
          notificationUrl: options.notificationUrl,
          paypalCertUrl: paypal?.certUrl,
        },
        { transport, clock: realClock },
      );
      stop.simulation = simulation;
      const progress = new ProgressLine((text) => process.stderr.write(text), process.stderr.isTTY === true, Date.now);
      const ticker = setInterval(() => progress.tick(formatProgress(simulation.progress())), 1_000);
      ticker.unref();
      let report: SimulationReport;
      try {
        report = await simulation.run();
      } finally {
        clearInterval(ticker);
        progress.end();
      }

      const info: RunInfo = {
        provider: options.provider,
        endpoint: options.endpoint,
        url: options.url,
        schedule: options.schedule,
        timeScale: options.timeScale,
        seed: options.seed,
        copies: options.copies,
        concurrency: options.concurrency,
        orders: orderIds ?? [],
        ...(objects ? { payloadStyle: 'thin' as const, objectsUrl: objects.url } : {}),
      };
      // Only worth waiting for when every event reached the service as it should have.
      const orders = orderIds && failure(report) === undefined ? await checkOrders(options, orderIds, () => stop.requested) : undefined;
      // Adyen's answer does not tell a new delivery from a recorded one: the archive does.
      const archive =
        options.provider === 'adyen' && options.adminToken && failure(report) === undefined
          ? await checkArchive(options, report.events.map((e) => e.eventId))
          : undefined;
      const processing = options.adminToken ? (ids: string[]) => stillProcessing(options, ids) : undefined;
      const objectReads = objects ? await awaitObjectReads(objects, payments, report, options.waitMs, () => stop.requested, processing) : undefined;
      if (options.json) ctx.out(JSON.stringify(summaryJson(info, report, orders, archive, objectReads), null, 2));
      else for (const line of formatSummary(info, report, orders, archive, objectReads)) ctx.out(line);
      const why = failure(report, orders, archive);
      if (why) throw new CliExit(EXIT.failure, why);
      if (!options.json) {
        const once = archive ? `each recorded exactly once (archive)` : 'each accepted at most once';
        ctx.out(`ok: all ${report.events.length} events acknowledged, ${once}${orders ? `, all ${orders.total} orders fulfilled` : ''}`);
      }
      return EXIT.ok;
    } finally {
      process.removeListener('SIGINT', onInterrupt);
      process.removeListener('SIGTERM', onInterrupt);
      await objects?.close();
      await paypal?.close();
    }
  },
};
