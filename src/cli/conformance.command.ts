import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  ADMIN_TOKEN_OPTION,
  adminTokenGiven,
  parseBaseUrl,
  parseCommandArgs,
  readAdminToken,
  readPayloadStyle,
  readSecrets,
  requireOptions,
  SECRET_OPTIONS,
  secretsGiven,
  THIN_OPTIONS,
  wholeNumber,
} from './args';
import { CliCommand, CliExit, EXIT } from './context';
import { isSigningSecret } from '../providers/standard-keys';
import { adyenLibrary, isAdyenKey } from './remote/adyen';
import { CHECK_SUMMARIES, CHECKS, CheckResult, runConformance } from './remote/conformance';
import { serveObjects } from './remote/objects-server';
import { REMOTE_PROVIDERS, type RemoteProvider } from './remote/events';
import { PROVIDER_OPTIONS, readProviderSettings, startPaypalKit } from './remote/provider-options';
import type { PaypalCertServer } from '../testing/paypal';
import { mollieRefusal } from './simulate.command';

/** The providers the checks can play (not mollie: its deliveries are authenticated by Mollie's own API). */
const PROVIDERS: readonly RemoteProvider[] = REMOTE_PROVIDERS;

const USAGE = [
  `usage: payment-webhooks conformance --url <base URL> --endpoint <id> --provider ${PROVIDERS.join('|')}`,
  '         --secret-file <path> | --secret <s> [--admin-token <t>] [--merchant <account>] [--carrier <name>]',
  '         [--wait <seconds>] [--json]',
  '         [--payload-style snapshot|thin --serve-objects <host:port> [--stripe-api-key-file <path>]]',
  '  The re-delivery checks to pass before going live, against a running service (staging): signed deliveries to',
  '  <url>/webhooks/<endpoint> and its REST API with the admin token. It creates a few orders (reference',
  '  conformance-…) that its events pay, so their shipments go to the configured carrier: point it at a sandbox carrier.',
  '  --url includes any route prefix (http://127.0.0.1:3000/pay). --secret-file: the secret, or one a line (each signs,',
  '  the first the current one, as during a rotation; blank lines and # comments skipped); or --secret, repeatable, but',
  '  ps shows it to every user. The admin token: ADMIN_TOKEN from the environment, or --admin-token (ps shows it too).',
  '  standard: a whsec_ secret signs v1, a whsk_ (an ed25519 private key) v1a.',
  "  adyen: the endpoint's hex HMAC key (each item signed by the first one, with the official @adyen/api-library);",
  '  --merchant <merchantAccountCode> is required; the answer is [accepted] for a new delivery and a recorded one alike,',
  '  so what was recorded is read from the archive; automatic capture is played (the AUTHORISATION is the payment).',
  "  mollie is refused: its deliveries are authenticated by fetching the payment from Mollie's API.",
  "  --merchant: the account bodies declare and payments are registered under (needed on a merchantAccountIds",
  '  endpoint). --wait: the longest wait for processing or a shipment, per check (default 30).',
  '  stripe, --payload-style thin: plays an endpoint with "payloadStyle": "thin" (notifications v1.<type> that name',
  '  their object; default snapshot). --serve-objects <host:port>, required with thin: for the run the kit serves',
  '  GET /v1/payment_intents|charges|disputes/{id} there (404 resource_missing otherwise), each object put in before',
  "  its notification is sent: point the endpoint's apiBaseUrl at http://<host:port>, reachable from the service.",
  "  --stripe-api-key-file: the endpoint's apiKey, which each fetch must carry (default: any bearer); never printed.",
  '  Thin adds the checks missing-object and fetched-once; every other check applies to thin as it is.',
  "  paypal: --secret is the endpoint's webhookId. The kit signs with its own key and serves the certificate on",
  '  https://127.0.0.1:<--paypal-cert-port> (default a free port, printed on stderr): the endpoint must list',
  '  "certHosts": ["127.0.0.1:<port>"] and "caFile": a file holding the kit\'s CA (payment-webhooks paypal-test-ca),',
  '  and the service run on this machine. checkout: the webhook\'s signature key. square: the signature key,',
  "  --merchant <merchant_id> (the endpoint's account) and --notification-url <url>, the endpoint's notificationUrl",
  '  exactly (default <url>/webhooks/<endpoint> when that is https). paddle: the destination\'s secret key',
  '  (pdl_ntfset_…; several sign at once, as during a rotation).',
  '  One line per check, PASS|FAIL <check> — <detail>, then "conformance: N/M checks pass"; --json prints one JSON',
  '  document instead. Exit 0 only when every check passes, 1 when one fails, 2 when it could not run.',
  '  Checks:',
  ...CHECKS.map((c) => `    ${c.padEnd(15)} ${CHECK_SUMMARIES[c]}`),
].join('\n');

/**
 * `payment-webhooks conformance`: what a team runs against a deployment before it takes
 * real traffic. Reads no environment but ADMIN_TOKEN: everything goes over HTTP to the service named by `--url`.
 */
export const conformanceCommand: CliCommand = {
  summary: 'the re-delivery checks to pass before going live, against a running service',
  usage: USAGE,
  environment: false,
  async run(ctx) {
    const values = parseCommandArgs('conformance', USAGE, ctx.args, {
      url: { type: 'string' },
      endpoint: { type: 'string' },
      provider: { type: 'string' },
      ...SECRET_OPTIONS,
      ...ADMIN_TOKEN_OPTION,
      merchant: { type: 'string' },
      carrier: { type: 'string' },
      wait: { type: 'string' },
      json: { type: 'boolean' },
      ...THIN_OPTIONS,
      ...PROVIDER_OPTIONS,
    });
    requireOptions('conformance', USAGE, values, ['url', 'endpoint', 'provider', secretsGiven(values), adminTokenGiven(values['admin-token'], ctx.remoteEnv)]);
    if (values.provider === 'mollie') throw new CliExit(EXIT.couldNotRun, mollieRefusal('conformance'));
    if (!(PROVIDERS as readonly string[]).includes(values.provider!)) {
      throw new CliExit(EXIT.couldNotRun, `conformance: --provider must be one of ${PROVIDERS.join(', ')}`);
    }
    const { style, serving } = readPayloadStyle('conformance', values, values.provider!);
    const url = parseBaseUrl('conformance', 'url', values.url!, values.endpoint!);
    const wait = wholeNumber('conformance', 'wait', values.wait, 30, 1, 3600);
    const secrets = readSecrets('conformance', values)!;
    if (values.provider === 'standard' && !secrets.every(isSigningSecret)) {
      throw new CliExit(
        EXIT.couldNotRun,
        'conformance: each secret of a standard endpoint must be whsec_ or whsk_ followed by base64 (Standard Webhooks signs with the decoded key: whsec_ v1, whsk_ v1a)',
      );
    }
    if (values.provider === 'adyen') {
      if (!secrets.every(isAdyenKey)) {
        throw new CliExit(EXIT.couldNotRun, "conformance: each secret of an adyen endpoint must be the hex HMAC key the Customer Area shows (an even number of hex digits)");
      }
      if (values.merchant === undefined || values.merchant === '') {
        throw new CliExit(EXIT.couldNotRun, "conformance: --provider adyen needs --merchant <merchantAccountCode>: every item declares its merchant account (the endpoint's merchantAccountId)");
      }
      adyenLibrary('conformance');
    }
    const settings = readProviderSettings('conformance', values.provider as RemoteProvider, values, secrets, values.url!, values.endpoint!);
    const adminToken = readAdminToken('conformance', values['admin-token'], ctx.remoteEnv)!;

    const json = values.json === true;
    const startedAt = new Date().toISOString();
    const objects = serving ? await serveObjects('conformance', serving.address, serving.apiKey) : undefined;
    let paypal: PaypalCertServer | undefined;
    let results: CheckResult[];
    try {
      if (settings.paypalCertPort !== undefined) paypal = await startPaypalKit('conformance', settings.paypalCertPort, (line) => process.stderr.write(`${line}\n`));
      results = await runConformance({
        url: url.toString(),
        endpoint: values.endpoint!,
        provider: values.provider as RemoteProvider,
        secrets,
        adminToken,
        merchant: values.merchant,
        carrier: values.carrier,
        waitMs: wait * 1000,
        requestTimeoutMs: 10_000,
        onResult: json ? undefined : (r) => ctx.out(formatResult(r)),
        payloadStyle: style,
        objects,
        notificationUrl: settings.notificationUrl,
        paypalCertUrl: paypal?.certUrl,
      });
    } finally {
      await objects?.close();
      await paypal?.close();
    }
    const passed = results.filter((r) => r.pass).length;
    if (json) {
      ctx.out(
        JSON.stringify(
          {
            tool: `nestjs-payment-webhooks ${packageVersion()} conformance`,
            startedAt,
            finishedAt: new Date().toISOString(),
            url: url.toString(),
            endpoint: values.endpoint,
            provider: values.provider,
            ...(objects ? { payloadStyle: style, objects: { url: objects.url, requests: objects.requests.length, answers: objects.byStatus() } } : {}),
            passed,
            total: results.length,
            checks: results,
          },
          null,
          2,
        ),
      );
    } else {
      ctx.out(`conformance: ${passed}/${results.length} checks pass`);
    }
    return passed === results.length ? EXIT.ok : EXIT.failure;
  },
};

export function formatResult(r: CheckResult): string {
  return `${r.pass ? 'PASS' : 'FAIL'} ${r.check} — ${r.detail}${r.hint ? ` — look at: ${r.hint}` : ''}`;
}

/** This package's version, for the evidence a run leaves (the nearest package.json of this package). */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'nestjs-payment-webhooks') return pkg.version ?? 'unknown';
    } catch {
      // not here: one level up
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}
