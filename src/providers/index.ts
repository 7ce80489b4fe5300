import { adyenProvider } from './adyen.provider';
import { checkoutProvider } from './checkout.provider';
import { factuareaProvider } from './factuarea.provider';
import type { HmacProvider } from './hmac';
import { mollieProvider } from './mollie.provider';
import { paddleProvider } from './paddle.provider';
import { paymosProvider } from './paymos.provider';
import { paypalProvider } from './paypal.provider';
import type { ProviderAdapter } from './provider';
import { squareProvider } from './square.provider';
import { standardProvider } from './standard.provider';
import { stripeProvider } from './stripe.provider';

/** The providers this package brings, by the name an endpoint definition gives (docs/webhooks.md). */
export const BUILT_IN_PROVIDER_NAMES = ['paymos', 'factuarea', 'stripe', 'standard', 'adyen', 'mollie', 'paypal', 'checkout', 'square', 'paddle'] as const;
export type BuiltInProviderName = (typeof BUILT_IN_PROVIDER_NAMES)[number];

/** The built-in providers of the HMAC scheme (signed over the raw bytes, one event a delivery). */
export const PROVIDERS: Readonly<Record<'paymos' | 'factuarea' | 'stripe' | 'standard', HmacProvider>> = {
  paymos: paymosProvider,
  factuarea: factuareaProvider,
  stripe: stripeProvider,
  standard: standardProvider,
};

/** The names of the built-in providers of the HMAC scheme. */
export type HmacProviderName = keyof typeof PROVIDERS;

/** Every built-in provider. */
export const BUILT_IN_PROVIDERS: Readonly<Record<BuiltInProviderName, ProviderAdapter>> = { ...PROVIDERS, adyen: adyenProvider, mollie: mollieProvider, paypal: paypalProvider, checkout: checkoutProvider, square: squareProvider, paddle: paddleProvider };

/** The members a provider must have as functions, and those it may have (as functions when it has them). */
const REQUIRED_FUNCTIONS = ['receive', 'normalize', 'prepareKey'] as const;
const OPTIONAL_FUNCTIONS = ['checkSecret', 'weakSecret', 'checkEndpoint', 'answer'] as const;

/** A list of non-empty strings. */
const isNameList = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string' && v.length > 0);

/**
 * Why a host's own provider cannot be registered, or null (the text follows `provider "<name>"`):
 * whatever of the interface the module will call or read, checked once here, so that a provider
 * the interface cannot take stops the start rather than a request or a job.
 */
function unusableProvider(adapter: ProviderAdapter): string | null {
  const missing = REQUIRED_FUNCTIONS.filter((m) => typeof adapter[m] !== 'function');
  if (missing.length > 0) return `has no ${missing.join(', ')} (see docs/providers.md)`;
  const notFunctions = OPTIONAL_FUNCTIONS.filter((m) => adapter[m] !== undefined && typeof adapter[m] !== 'function');
  if (notFunctions.length > 0) return `has ${notFunctions.join(', ')} that ${notFunctions.length === 1 ? 'is' : 'are'} not a function`;
  if (!Array.isArray(adapter.storedHeaders) || !Array.isArray(adapter.signatureHeaders)) {
    return 'must list its storedHeaders and signatureHeaders (lower-case header names)';
  }
  if ([...adapter.storedHeaders, ...adapter.signatureHeaders].some((h) => typeof h !== 'string' || h.length === 0 || h !== h.toLowerCase())) {
    return 'must name its headers in lower case';
  }
  if (adapter.signatureFields !== undefined && !isNameList(adapter.signatureFields)) return 'must list its signatureFields as dotted paths (strings)';
  if (adapter.endpointFields !== undefined && !isNameList(adapter.endpointFields)) return 'must list its endpointFields as field names (strings)';
  if (typeof adapter.declaresAccount !== 'boolean') return 'must say whether its events declare their account (declaresAccount: true or false)';
  if (adapter.secrets !== 'required' && adapter.secrets !== 'none') return 'must say whether its endpoints need secrets ("required" or "none")';
  const usesApi = adapter.usesApi as { defaultBaseUrl?: unknown } | undefined;
  if (usesApi !== undefined && (typeof usesApi !== 'object' || usesApi === null || typeof usesApi.defaultBaseUrl !== 'string' || !/^https?:\/\//.test(usesApi.defaultBaseUrl))) {
    return 'must give usesApi as { defaultBaseUrl: "<an http(s) URL>" }';
  }
  const fetcher = adapter.fetchesState as { wants?: unknown; fetch?: unknown } | undefined;
  if (fetcher !== undefined && (typeof fetcher !== 'object' || fetcher === null || typeof fetcher.wants !== 'function' || typeof fetcher.fetch !== 'function')) {
    return 'must give fetchesState as { wants(), fetch() } (two functions)';
  }
  const commands = adapter.commands as { types?: unknown; ready?: unknown; send?: unknown } | undefined;
  if (
    commands !== undefined &&
    (typeof commands !== 'object' ||
      commands === null ||
      !Array.isArray(commands.types) ||
      commands.types.length === 0 ||
      !commands.types.every((t) => t === 'refund' || t === 'capture' || t === 'void') ||
      typeof commands.ready !== 'function' ||
      typeof commands.send !== 'function')
  ) {
    return 'must give commands as { types: ["refund" | "capture" | "void", ...], ready(), send() }';
  }
  const reader = adapter.readPayment as { ready?: unknown; read?: unknown } | undefined;
  if (reader !== undefined && (typeof reader !== 'object' || reader === null || typeof reader.ready !== 'function' || typeof reader.read !== 'function')) {
    return 'must give readPayment as { ready(), read() } (two functions)';
  }
  return null;
}

/** A provider name: what an endpoint's `provider` and the inbox's `provider` column hold. */
export const PROVIDER_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

/**
 * The providers a module knows: the built-in ones and the host's own (`providers` option), by name.
 * Throws, naming the provider, on a host provider that takes a built-in name or another's, or
 * that is not an adapter (docs/providers.md).
 */
export function providerTable(own: readonly ProviderAdapter[] = []): ReadonlyMap<string, ProviderAdapter> {
  const table = new Map<string, ProviderAdapter>(Object.entries(BUILT_IN_PROVIDERS));
  for (const adapter of own) {
    // Anything but an object is no adapter: its name is what is reported.
    const name = typeof adapter === 'object' ? (adapter as { name?: unknown } | null)?.name : undefined;
    if (typeof name !== 'string' || !PROVIDER_NAME.test(name)) {
      throw new Error(`a provider's name must match ${PROVIDER_NAME.source} (got ${JSON.stringify(String(name)).slice(0, 40)})`);
    }
    if ((BUILT_IN_PROVIDER_NAMES as readonly string[]).includes(name)) {
      throw new Error(`provider "${name}" is a built-in provider's name: give the host's own provider another name`);
    }
    if (table.has(name)) throw new Error(`provider "${name}" is registered twice`);
    const problem = unusableProvider(adapter);
    if (problem) throw new Error(`provider "${name}" ${problem}`);
    table.set(name, adapter);
  }
  return table;
}

export * from './provider';
export * from './hmac';
export * from './receive';
export * from './adapter-calls';
export * from './command-answers';
