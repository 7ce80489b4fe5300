import { AdapterCallError } from './adapter-calls';
import { DeliveryRefusal, lenientId, LiveKey, MalformedPayloadError, optionalId, requireId, ProviderAdapter, ProviderEndpoint, RawDelivery, ReceiveContext, ReceivedEvent, ReceiveResult } from './provider';

/** Which accounts an endpoint serves: its one account, or many (`'*'`: any). */
export interface AccountScope {
  /** The one account of a single-account endpoint; null on an endpoint of many. */
  merchantAccountId: string | null;
  /** The accounts an endpoint of many serves (`'*'`: any); null on a single-account endpoint. */
  merchantAccountIds: string[] | '*' | null;
}

/**
 * The merchant account of an event received on an endpoint: the endpoint's own, or on an endpoint
 * of many accounts the account the event declares (null when it declares none).
 */
export function eventAccount(endpoint: Pick<AccountScope, 'merchantAccountId'>, declared: string | null): string | null {
  return endpoint.merchantAccountId ?? declared;
}

/** Whether an endpoint serves `account` (a single-account endpoint: its own only). */
export function servesAccount(endpoint: AccountScope, account: string): boolean {
  if (endpoint.merchantAccountIds === '*') return true;
  if (endpoint.merchantAccountIds !== null) return endpoint.merchantAccountIds.includes(account);
  return endpoint.merchantAccountId === account;
}

/** An event of a delivery with the account it is keyed on, and whether its endpoint serves that account. */
export interface KeyedEvent extends ReceivedEvent {
  merchantAccountId: string;
  /**
   * False for an event of an account its endpoint does not serve: recorded, it ends
   * `rejected`/`account_mismatch`, and it never takes the key of the account it names.
   */
  served: boolean;
}

/** The 400 detail of an event that declares no account on an endpoint of many. */
export const MANY_ACCOUNTS_NONE_DECLARED = 'the endpoint serves many merchant accounts and the body declares none';

/**
 * What the receive path records of the events an adapter read, whatever the adapter: at least one
 * event, printable ids (a host's own adapter is held to the rule the built-in ones keep when they
 * read), a body of text, and each event's account (MalformedPayloadError otherwise).
 */
export function keyEvents(endpoint: AccountScope, events: readonly ReceivedEvent[]): KeyedEvent[] {
  // Not a list, or a list of anything but objects, is the adapter's bug (503), not the sender's.
  if (!Array.isArray(events)) throw new AdapterCallError('provider_adapter_invalid', 'an adapter returned events that are not an array');
  if (events.length === 0) throw new MalformedPayloadError('the delivery carries no event');
  return events.map((event) => {
    if (typeof event !== 'object' || event === null) throw new AdapterCallError('provider_adapter_invalid', 'an adapter returned an event that is not an object');
    // The rule the built-in adapters keep as they read, held here for every adapter.
    const eventId = requireId(event.eventId, 'the event id');
    const eventType = requireId(event.eventType, 'the event type');
    const resourceId = optionalId(event.resourceId, 'the resource id');
    const account = optionalId(event.account, 'the account');
    const deliveryId = optionalId(event.deliveryId, 'the delivery id');
    if (typeof event.body !== 'string') throw new AdapterCallError('provider_adapter_invalid', 'an adapter returned an event without its body text');
    const merchantAccountId = eventAccount(endpoint, account);
    // An endpoint of many accounts keys each event on the account it declares: none, no key.
    if (merchantAccountId === null) throw new MalformedPayloadError(MANY_ACCOUNTS_NONE_DECLARED);
    return {
      eventId,
      eventType,
      resourceId,
      deliveryId,
      account,
      apiVersion: lenientId(event.apiVersion),
      body: event.body,
      merchantAccountId,
      // A single-account endpoint serves an event that declares its account or none.
      served: servesAccount(endpoint, account ?? merchantAccountId),
    };
  });
}

/** An endpoint as the receive path runs an adapter for it. */
export interface ReceivingEndpoint extends AccountScope {
  provider: ProviderAdapter;
  toleranceSeconds: number;
  settings: ProviderEndpoint;
}

/** What the receive path makes of an authentic delivery: its events, keyed, or why it is refused. */
export type DeliveryOutcome =
  | { ok: true; secretIndex: number | null; events: KeyedEvent[] }
  | { ok: false; error: Exclude<ReceiveResult, { ok: true }>['error']; detail?: string };

/** Outside the service (the testing kit): no payment is known. */
const NOTHING_KNOWN = async (): Promise<boolean> => false;

/**
 * Checks 3–6 of docs/webhooks.md#checks-and-answers for one delivery, the same for every provider:
 * the adapter's own checks in its order, then what the receive path requires of every event. A
 * MalformedPayloadError is a refusal with its detail; any other throw (a provider's API away) is
 * left to the caller, which answers 503.
 */
export async function receiveDelivery(
  endpoint: ReceivingEndpoint,
  delivery: RawDelivery,
  keys: readonly LiveKey[],
  nowMs: number,
  from: Partial<Pick<ReceiveContext, 'sender' | 'knowsPayment'>> = {},
): Promise<DeliveryOutcome> {
  const sender = from.sender ?? '';
  const knowsPayment = from.knowsPayment ?? NOTHING_KNOWN;
  try {
    const result = await endpoint.provider.receive(delivery, { endpoint: endpoint.settings, keys, nowMs, toleranceSeconds: endpoint.toleranceSeconds, sender, knowsPayment });
    return outcomeOf(endpoint, result, keys);
  } catch (err) {
    if (err instanceof MalformedPayloadError) return { ok: false, error: 'malformed_payload', detail: err.detail };
    throw err;
  }
}

/**
 * What the adapter's result says, each member read once into a value of our own (a getter that
 * answers differently each time, or throws, decides nothing after this). `ok` is exactly `true` or
 * `false`: a truthy value of another kind is the adapter's bug, never an acceptance. An accepted
 * delivery names one of the endpoint's live keys, or null; a refusal's detail is kept when it is
 * text. Anything else is an AdapterCallError (503).
 */
function outcomeOf(endpoint: ReceivingEndpoint, result: ReceiveResult, keys: readonly LiveKey[]): DeliveryOutcome {
  if (typeof result !== 'object' || result === null) throw new AdapterCallError('provider_adapter_invalid', 'an adapter returned no result object');
  const ok: unknown = result.ok;
  if (ok === false) {
    const { error, detail } = result as { error: DeliveryRefusal; detail?: unknown };
    return typeof detail === 'string' ? { ok: false, error, detail } : { ok: false, error };
  }
  if (ok !== true) throw new AdapterCallError('provider_adapter_invalid', 'an adapter returned a result whose "ok" is neither true nor false');
  const { secretIndex, events } = result as { secretIndex: unknown; events: ReceivedEvent[] };
  if (secretIndex !== null && !keys.some((k) => k.index === secretIndex)) {
    throw new AdapterCallError('provider_adapter_invalid', "an adapter returned a secretIndex that is not one of the endpoint's live keys (nor null)");
  }
  return { ok: true, secretIndex: secretIndex as number | null, events: keyEvents(endpoint, events) };
}
