import type { IncomingHttpHeaders } from 'node:http';
import { liveKeys, resolveEndpoint } from '../config/endpoints';
import { DEFAULT_TUNING, type EndpointDefinition } from '../config/options';
import { validateEndpoints } from '../config/validate';
import { BUILT_IN_PROVIDERS, callAdapter, DeliveryOutcome, ProviderAdapter, providerTable, receiveDelivery } from '../providers';

/** A delivery as a sender makes it: headers (any case, as a client writes them) and the body. */
export interface TestDelivery {
  headers?: Record<string, string | string[] | undefined>;
  body: string | Buffer;
}

export interface ReceiveOptions {
  /**
   * The endpoint the delivery is sent to, as in the module's `endpoints` option; `provider` is the
   * adapter's name. Default: one secret `test-secret-0001` (none for an adapter without secrets)
   * and the merchant account `acc_test`.
   */
  endpoint?: Partial<EndpointDefinition>;
  /** The receive path's clock, in unix milliseconds. Default now. */
  nowMs?: number;
  /** The receive path's deadline on the adapter (`receiveTimeoutMs`). Default the module's, 4500. */
  timeoutMs?: number;
}

/** A delivery's headers as Node hands them to the receive path: lower-case names. */
export function nodeHeaders(headers: TestDelivery['headers'] = {}): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name.toLowerCase()] = value;
  return out;
}

/**
 * Runs a provider adapter through the module's receive path for one delivery, as
 * `POST /webhooks/{endpointId}` does once the endpoint is found and the body read: the endpoint
 * validated as at start (a bad definition throws the start's message), the live secrets, the
 * adapter's checks in its order, then what every event must be (printable ids, an account). What
 * comes back is what the route would record or refuse (docs/providers.md#testing-an-adapter); it
 * rejects with what the route answers 503 (an adapter that throws, returns what the interface cannot
 * take, or has not answered within `timeoutMs`).
 */
export async function receiveWith(adapter: ProviderAdapter, delivery: TestDelivery, options: ReceiveOptions = {}): Promise<DeliveryOutcome> {
  const builtIn = (BUILT_IN_PROVIDERS as Record<string, ProviderAdapter>)[adapter.name] === adapter;
  const table = builtIn ? providerTable() : providerTable([adapter]);
  const nowMs = options.nowMs ?? Date.now();
  const given = options.endpoint ?? {};
  const definition = {
    id: 'test-endpoint',
    ...(given.merchantAccountIds === undefined ? { merchantAccountId: 'acc_test' } : {}),
    ...(adapter.secrets === 'none' ? {} : { secrets: ['test-secret-0001'] }),
    ...given,
    provider: adapter.name,
  };
  const [validated] = validateEndpoints('endpoint', [definition], nowMs, table);
  const endpoint = resolveEndpoint(validated, table);
  const body = typeof delivery.body === 'string' ? Buffer.from(delivery.body, 'utf8') : delivery.body;
  // As the route does: an adapter that has not answered by the deadline is a 503 (a rejection here).
  return callAdapter({
    what: `provider "${adapter.name}" receive`,
    timeoutMs: options.timeoutMs ?? DEFAULT_TUNING.receiveTimeoutMs,
    call: () => receiveDelivery(endpoint, { headers: nodeHeaders(delivery.headers), body }, liveKeys(endpoint, nowMs), nowMs),
    passThrough: () => true,
  });
}
