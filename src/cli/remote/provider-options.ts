import { CliExit, EXIT } from '../context';
import { PAYPAL_TEST_CA_PEM, startPaypalCertServer, type PaypalCertServer } from '../../testing/paypal';
import { webhookUrl } from './delivery';
import type { RemoteProvider } from './events';

/**
 * The options only some providers take, shared by `simulate` and `conformance`: Square's
 * notification URL (signed before the body) and the port of PayPal's certificate server (the kit
 * signs with its own key, whose certificate it serves, chained to its own CA).
 */
export const PROVIDER_OPTIONS = {
  'notification-url': { type: 'string' },
  'paypal-cert-port': { type: 'string' },
} as const;

export interface ProviderValues {
  'notification-url'?: string;
  'paypal-cert-port'?: string;
  merchant?: string;
}

export interface ProviderSettings {
  /** Square: the URL Square signs, exactly as the endpoint's notificationUrl. */
  notificationUrl?: string;
  /** PayPal: where the certificate server listens on 127.0.0.1 (0: a free port). */
  paypalCertPort?: number;
}

/** PayPal's webhook ids, as the adapter takes them (letters, digits, - and _). */
const WEBHOOK_ID = /^[A-Za-z0-9_-]{1,64}$/;

function fail(command: string, message: string): never {
  throw new CliExit(EXIT.couldNotRun, `${command}: ${message}`);
}

/**
 * The provider-specific options, checked; anything wrong ends the command with exit 2 and one line
 * (never a secret's value). `url` is --url as given, `endpoint` --endpoint.
 */
export function readProviderSettings(command: string, provider: RemoteProvider, values: ProviderValues, secrets: string[], url: string, endpoint: string): ProviderSettings {
  if (values['notification-url'] !== undefined && provider !== 'square') fail(command, `--notification-url applies to square only (Square signs the URL before the body), not ${provider}`);
  if (values['paypal-cert-port'] !== undefined && provider !== 'paypal') fail(command, `--paypal-cert-port applies to paypal only, not ${provider}`);
  if ((provider === 'checkout' || provider === 'square' || provider === 'paypal') && secrets.length > 1) {
    const what = provider === 'paypal' ? "one webhook id: PayPal's signature is the certificate's, and names one webhook" : `one key: ${provider === 'square' ? 'Square' : 'Checkout.com'} signs with the key the webhook has now`;
    fail(command, `--provider ${provider} takes ${what} (${secrets.length} given)`);
  }
  if (provider === 'square') {
    if (values.merchant === undefined || values.merchant === '') {
      fail(command, "--provider square needs --merchant <merchant_id>: every notification names its seller, which must be the endpoint's merchant account");
    }
    const given = values['notification-url'] ?? webhookUrl(url, endpoint);
    let parsed: URL | undefined;
    try {
      parsed = new URL(given);
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== 'https:') {
      fail(
        command,
        values['notification-url'] === undefined
          ? `--provider square needs --notification-url <the endpoint's notificationUrl>: Square signs the https URL registered on the subscription, and ${given} is not one`
          : `--notification-url must be an https URL, the endpoint's notificationUrl exactly as registered at Square`,
      );
    }
    return { notificationUrl: given };
  }
  if (provider === 'paypal') {
    if (!WEBHOOK_ID.test(secrets[0] ?? '')) fail(command, "--secret of a paypal endpoint is its webhookId, the id PayPal shows for the webhook (letters, digits, - and _)");
    const given = values['paypal-cert-port'];
    if (given !== undefined && !(/^\d{1,5}$/.test(given) && Number(given) <= 65_535)) fail(command, `--paypal-cert-port must be a port from 0 to 65535, got "${given}"`);
    return { paypalCertPort: given === undefined ? 0 : Number(given) };
  }
  return {};
}

/**
 * Starts the kit's certificate server for a paypal run and says on stderr where it serves, and what
 * the endpoint must list: the deliveries name it in PAYPAL-CERT-URL, and the service fetches it.
 */
export async function startPaypalKit(command: string, port: number, say: (line: string) => void): Promise<PaypalCertServer> {
  let server: PaypalCertServer;
  try {
    server = await startPaypalCertServer({}, { port });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    fail(command, `--paypal-cert-port ${port}: the kit's certificate server could not listen on 127.0.0.1:${port} (${code ?? (err as Error).message})`);
  }
  say(`${command}: paypal: the kit serves its signing certificate at ${server.certUrl}; the endpoint's certHosts must list "${server.certHost}" and its caFile hold the kit's CA (payment-webhooks paypal-test-ca)`);
  return server;
}

/** The kit's CA, for an endpoint's caFile: what `payment-webhooks paypal-test-ca` prints. */
export const PAYPAL_KIT_CA_PEM = PAYPAL_TEST_CA_PEM;
