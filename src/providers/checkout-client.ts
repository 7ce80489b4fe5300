import { optionalPackage } from './optional-package';
import type { ProviderEndpoint } from './provider';

/**
 * What this module uses of Checkout.com's official SDK, `checkout-sdk-node`: typed here, so that a
 * host without the package still compiles, and shared by the payment commands (checkout.commands.ts)
 * and the payment reads (checkout.reader.ts).
 */

/** The npm package of Checkout.com's official SDK, an optional peer dependency of this module. */
export const CHECKOUT_PACKAGE = 'checkout-sdk-node';

/** The base URL of Checkout.com's API, where an endpoint's secret key is used. */
export const DEFAULT_CHECKOUT_API = 'https://api.checkout.com';

/** What this module calls of `checkout-sdk-node` (5.x). */
export interface CheckoutClient {
  payments: {
    get(paymentId: string): Promise<Record<string, unknown>>;
    refund(paymentId: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Record<string, unknown>>;
    capture(paymentId: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Record<string, unknown>>;
    void(paymentId: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Record<string, unknown>>;
  };
}

interface CheckoutOptions {
  /** A base URL that replaces the SDK's own (no merchant subdomain is then required). */
  host: string;
  /** `axios` is the SDK's only HTTP client that honours `timeout` (its default, `fetch`, never times out). */
  httpClient: 'axios';
  timeout: number;
}

interface CheckoutPackage {
  default?: new (secretKey: string, options: CheckoutOptions) => CheckoutClient;
  Checkout?: new (secretKey: string, options: CheckoutOptions) => CheckoutClient;
}

/**
 * The SDK, loaded the first time it is needed; null when it is not installed. Version 5 is an ES
 * module: Node 22 (this package's engine) requires it as any other.
 */
const checkoutPackage = optionalPackage(CHECKOUT_PACKAGE, () => require(CHECKOUT_PACKAGE) as CheckoutPackage);

/**
 * Environment variables the SDK reads before the key it is given: with `CKO_SECRET` it signs in
 * with OAuth, with `CKO_SECRET_KEY` it uses that key. Either would call with other credentials than
 * the endpoint's, so no call is made while one is set.
 */
const OVERRIDING_ENV = ['CKO_SECRET', 'CKO_SECRET_KEY'] as const;

/** Whether the endpoint holds what a call needs: its secret key. */
export function hasSecretKey(endpoint: ProviderEndpoint): endpoint is ProviderEndpoint & { apiKey: string } {
  return typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '';
}

/** The base URL an endpoint's calls go to, without a trailing slash. */
export function checkoutBaseUrl(endpoint: ProviderEndpoint): string {
  return (endpoint.apiBaseUrl ?? DEFAULT_CHECKOUT_API).replace(/\/+$/, '');
}

/**
 * A client per call, or why there is none: building one is cheap (no connection pool: axios uses
 * Node's global agent), and the timeout is the call's own. The SDK has no retries of its own.
 */
export function checkoutClientFor(endpoint: ProviderEndpoint & { apiKey: string }, timeoutMs: number): CheckoutClient | string {
  const pkg = checkoutPackage();
  const Checkout = pkg?.default ?? pkg?.Checkout;
  if (!Checkout) return `endpoint "${endpoint.id}" needs the ${CHECKOUT_PACKAGE} package: npm install ${CHECKOUT_PACKAGE}`;
  const overriding = OVERRIDING_ENV.find((name) => process.env[name] !== undefined);
  if (overriding) return `${overriding} is set in the environment: ${CHECKOUT_PACKAGE} would use it instead of endpoint "${endpoint.id}"'s apiKey`;
  return new Checkout(endpoint.apiKey, { host: checkoutBaseUrl(endpoint), httpClient: 'axios', timeout: timeoutMs });
}

/** A text about a call that may hold the key (an error's body or message): the key never gets through. */
export function withoutSecret(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}
