/**
 * What this module uses of Mollie's official client, `@mollie/api-client`: typed here, so that a host
 * without the package still compiles, and shared by the adapter (mollie.provider.ts) and its
 * commands (mollie.commands.ts) without either importing the other.
 */

/** The npm package of Mollie's official client, an optional peer dependency of this module. */
export const MOLLIE_PACKAGE = '@mollie/api-client';

/**
 * What this adapter uses of `@mollie/api-client`, typed here so that a host without the package
 * still compiles against this module.
 */
export interface MollieClientPackage {
  createMollieClient(options: { apiKey: string; apiEndpoint: string; versionStrings?: string | string[] }): {
    payments: { get(id: string, parameters: { embed: string[] }): Promise<object> };
  };
}

/** A Mollie amount: the currency and a decimal string in its exponent (`"49.90"`). */
export interface MollieAmount {
  currency: string;
  value: string;
}

/** What the payment commands use of a client made by `createMollieClient` (mollie.commands.ts). */
export interface MollieCommandClient {
  paymentRefunds: {
    create(parameters: { paymentId: string; amount: MollieAmount; description?: string; idempotencyKey: string }): Promise<{ id?: unknown; status?: unknown }>;
  };
  paymentCaptures: { create(parameters: { paymentId: string; amount?: MollieAmount; idempotencyKey: string }): Promise<object> };
  payments: { cancel(id: string, parameters: { idempotencyKey: string }): Promise<object> };
}

/** Loads the client package (throws `MODULE_NOT_FOUND` when it is not installed). */
export type MollieClientLoader = () => MollieClientPackage;

