import { createSign, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { crc32 } from '../common/crc32';

/*
 * PayPal's test kit (docs/webhooks.md#paypal): PayPal signs with the key of a certificate it serves,
 * so a test plays PayPal with a key pair, a certificate issued to PayPal's sandbox signing name by a
 * CA of the kit's own, and an HTTPS server on 127.0.0.1 that serves it. An endpoint under test
 * trusts the kit's CA (`caPem: PAYPAL_TEST_CA_PEM`, or `caFile` naming a copy) and lists the
 * server's host (`certHosts: [server.certHost]`); nothing else is trusted, and every check runs.
 * These keys are published: they must never be trusted anywhere but in tests.
 *
 * The certificates were made once with OpenSSL (test/fixtures/paypal/certs/make-certs.sh) and are
 * valid until 2126-11-13; the CA's key was thrown away.
 */

/** The kit's CA: what an endpoint under test trusts (its `caPem`, or the file its `caFile` names). */
export const PAYPAL_TEST_CA_PEM = `-----BEGIN CERTIFICATE-----
MIIDijCCAnKgAwIBAgIUTxyYM5J2plgNtpGJOwW3lPlK74QwDQYJKoZIhvcNAQEL
BQAwXDEpMCcGA1UECgwgbmVzdGpzLXBheW1lbnQtd2ViaG9va3MgdGVzdCBraXQx
LzAtBgNVBAMMJm5lc3Rqcy1wYXltZW50LXdlYmhvb2tzIFBheVBhbCB0ZXN0IENB
MCAXDTI2MTIwNzEzMjgzNloYDzIxMjYxMTEzMTMyODM2WjBcMSkwJwYDVQQKDCBu
ZXN0anMtcGF5bWVudC13ZWJob29rcyB0ZXN0IGtpdDEvMC0GA1UEAwwmbmVzdGpz
LXBheW1lbnQtd2ViaG9va3MgUGF5UGFsIHRlc3QgQ0EwggEiMA0GCSqGSIb3DQEB
AQUAA4IBDwAwggEKAoIBAQDOJ/uvXK+beV70ygxr53JClNA/nJfmsGlBTqTd5H+Y
0szcHU20PxZX8aEq6kaSNd5/QSUvbYcWPaKtEbGN3c2+YBUh3lSZd8SphhA+nhIB
muWEurnPwgN6EAQBx76pE5VN+FPdX496WRg1RmMmLK1pRpZbAt7qCgd6xvY0BuXb
Ff3s2mi7i8RITlrQf1jDvFCfokWS+pNo0Q2i2FrSHiut5hMVHyVBQxWlJwT8Xqhu
moEPM7jnj4A3dgAoB7pBooR82Hxg3SOYFO0WRyB2N3wuDgg1ZmeTWV8Z1XxVHz6/
n0ayoRPBX8Lk7Ct0wh9h7V7n0rIuIXfNH5hVMzkjDBqxAgMBAAGjQjBAMA8GA1Ud
EwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBT2kMOH27rt583D
++BpWIEDuZG+0DANBgkqhkiG9w0BAQsFAAOCAQEAiU6kdJFoglN/06ywZFzkub99
VeYYB99fWan9YZzGoF43EzTaCq91YYi4Hm4byH9zwrd+J7cdAWQ7CdkXQ7tLP/ie
RXk8i2p0rMIea6biTnKcteK1hZqWJNIe+49vXuFhMhjeucd5frCn8tutfJ7lvZzF
7lXW5JGQC4ZMr0ORMoCibWEOH3ooCjFqbUGU0DTTRJ7+5lXAxMNzlBnK2oef7Vjr
B8Bq+gAV17F1ndKFCPo4BPDPh8oVUE9oKWkMCur7JJOwFR0kRfzs0Qa4gA6ZaTWe
5uxL1MhlIk5V8KGIjxSmYsHra9z0l7jYb63n3MpheDh2Lo9Jb/Akuy/XQWB1tQ==
-----END CERTIFICATE-----
`;

/** The kit's signing certificate: RSA-2048, subject CN and DNS SAN `messageverificationcerts.sandbox.paypal.com`, issued by the kit's CA. */
export const PAYPAL_TEST_SIGNING_CERT_PEM = `-----BEGIN CERTIFICATE-----
MIIEBjCCAu6gAwIBAgIUfSFPKyZ9f6cooVHNqrxAzOK7VlwwDQYJKoZIhvcNAQEL
BQAwXDEpMCcGA1UECgwgbmVzdGpzLXBheW1lbnQtd2ViaG9va3MgdGVzdCBraXQx
LzAtBgNVBAMMJm5lc3Rqcy1wYXltZW50LXdlYmhvb2tzIFBheVBhbCB0ZXN0IENB
MCAXDTI2MTIwNzEzMjgzN1oYDzIxMjYxMTEzMTMyODM3WjBhMSkwJwYDVQQKDCBu
ZXN0anMtcGF5bWVudC13ZWJob29rcyB0ZXN0IGtpdDE0MDIGA1UEAwwrbWVzc2Fn
ZXZlcmlmaWNhdGlvbmNlcnRzLnNhbmRib3gucGF5cGFsLmNvbTCCASIwDQYJKoZI
hvcNAQEBBQADggEPADCCAQoCggEBAL2R++qIyUIT4MjwQ2YW1VvOFTm2yxOVpSMT
7xVX/zutpIZLGU2n3XmTuCgWd2o3ghtxl7nr2AD24i7m0rvj7XgKnfrxkkhhjceu
59rD1+S2xj+wDYTBDfsO0J4Ce9zdREgtFYEV+z+yXlziQ2lRtGEZf5xNCtc+3H8G
EDT62hbS6Ql3fhNa/nAtIaFXtIlsor1MnYhcLb/PM1wtAIwJ1+/INakq5CT8trbQ
wx7G4gv3NnwsVwhqPq608meKoRItlwZ+yaOhTFLszeWM9wySwld62KhaSw/M7jK2
LUdfTG7Op4Eyk9JF4rWTX4ZtLzFmKN7kY+2ggk7MZNEaijXG5DMCAwEAAaOBuDCB
tTAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIFoDAdBgNVHSUEFjAUBggrBgEF
BQcDAQYIKwYBBQUHAwIwNgYDVR0RBC8wLYIrbWVzc2FnZXZlcmlmaWNhdGlvbmNl
cnRzLnNhbmRib3gucGF5cGFsLmNvbTAdBgNVHQ4EFgQUmypmjLSTlK3CxucMzGRF
G0iECbowHwYDVR0jBBgwFoAU9pDDh9u67efNw/vgaViBA7mRvtAwDQYJKoZIhvcN
AQELBQADggEBAD0pbDFEcgcAPXtT7L0WWTPrdxji8a9THRKxN3zzeABxrlmWPfdo
KXUizD3rJXvAkqnVv6sH0epSa5Ri8i+/QVAuYMfxVUwZ8SfShjhEZyy+be+jCcLQ
uPq6fv2c+5SSQ6JI+KJwLtc3B0vWyLldnHPeyOvgX4CIedOU/rF4FhMfDX42f8pd
0O+uzJaXt3tRWKN9OGsBqpHHl5yVcMTQTbfVcmwCOWkD/onlQqst4s2X4qSKOZCI
jCxLLOisjKyJ3+gNUodV+1vwxWoidGXJY/0DolMe5uFWa/TAv0gSivbmtf+BxXe0
RhEC9DMI0AtErXlHZZCP7jOSOiZymcMy4g8=
-----END CERTIFICATE-----
`;

/** The private key of the signing certificate (PKCS#8): what signs a delivery as PayPal. */
export const PAYPAL_TEST_SIGNING_KEY_PEM = `-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQC9kfvqiMlCE+DI
8ENmFtVbzhU5tssTlaUjE+8VV/87raSGSxlNp915k7goFndqN4IbcZe569gA9uIu
5tK74+14Cp368ZJIYY3Hrufaw9fktsY/sA2EwQ37DtCeAnvc3URILRWBFfs/sl5c
4kNpUbRhGX+cTQrXPtx/BhA0+toW0ukJd34TWv5wLSGhV7SJbKK9TJ2IXC2/zzNc
LQCMCdfvyDWpKuQk/La20MMexuIL9zZ8LFcIaj6utPJniqESLZcGfsmjoUxS7M3l
jPcMksJXetioWksPzO4yti1HX0xuzqeBMpPSReK1k1+GbS8xZije5GPtoIJOzGTR
Goo1xuQzAgMBAAECggEAMuu3w3Qiu4EjbFY9hHq1rQdaZDpZqlUUGqwMGKuef6VR
AFHD5jwlHbc0THBce0eVx1Fn9CUJzJiEgRy3lojPDOOtM+8X4CF0OCMfXIAmyeTe
s9TSjMpeuwVrvEXmh5lX8htKH3aMGrwK5OBSQ0QTM9HpmU6IjvDvwZ8bU1/enSpr
Z5C6miMB+doA7j4kHI7GTQPYNek8FDbwtsNNuC8a/fMXyVdGNYz3yf/JjqQr1/5f
+xsswaZ1a+JUTzFvcDLjTIxPaRz+akzwFhQyoMQfW7oXcRZqZbCwq8DUYb1HK8WZ
HtTi1RT00LLf97PzdQ4cGWrVkglYPmeu3p84ZJ1ZAQKBgQDwkT0x+KW33u+EYzPr
Mt7396ncbC7yXIbAH9Sm/L8891zHu7pDfAhGmM1h10FoYLCD2mEXN5JTbJPgDy0g
5JUxbEmxJxXQitXuo0r+jQugrUV1/srmvt06KRnNM7PyDGQRSxN/bppge/bUxC5a
eHbskGqtI/mZZh33IRXur7zYIQKBgQDJuzxrAiM2cTCpDCDYA/hdaSy2YarJ/wO9
UVf+ar/inmcKoJzmgisY0jnGKqUGUX1gaxHPTkQvKkifnVPsO0oNE/XAKnaMuAtR
7GWPQdRC4Z9Dq6CPIG/fXeAU4rm1HLgczqsgHFu7YXYkHKP/k/mDvpTznpCZGvCp
+ZIlYrSh0wKBgQDUJwHUw/dBhHWuRt5OmXpRLDS8kxuD2V1sqaWb7mGonm1QJ5pI
UWXq/G6DzpV8O2jvnvLoyrVcpPB0NG4UCAIap+kFNfbjBs1Luu40Nqb+eFA9kwnV
HJV06TI76VDUMWE+bvsu8pdqZ2hykuBeIMagMWwibQt94LSkcKUq7giYgQKBgQCj
YL2k2J1WGUPUlRsAd+6tEGIC74SXha4spHWEekYfrjQ7miqYUTHAL3pU8PKn9FV7
QhuxbmywWilpA80VFEt73f94+6r5epDIb5Es/Z5/8CTBdH1bjWStXWT+5USL1s+R
nRtgrTbpwhwhUQTNF7XLqg0OZQwsw3HH53UiTBeIuwKBgQCYMwmhWE0wGDHs5WEb
4BBm03u/7ODwgEAUHWJYNu0j5oj/jM6qf2UVCRFWoaTpY67TN0lcaOFizmqW8sJa
MI9nVySJALszennP3hSyJz8TUMPNEAijhi05frWhiTyQ+9/V5ox1SjGHWx8+EClT
BZ+F0ygu9O18ZcPqG8U2DNZpPw==
-----END PRIVATE KEY-----
`;

/** The TLS certificate of the kit's server (IP SAN 127.0.0.1, EC P-256), issued by the kit's CA, and its key. */
const TLS_CERT_PEM = `-----BEGIN CERTIFICATE-----
MIICvTCCAaWgAwIBAgIUfSFPKyZ9f6cooVHNqrxAzOK7Vl0wDQYJKoZIhvcNAQEL
BQAwXDEpMCcGA1UECgwgbmVzdGpzLXBheW1lbnQtd2ViaG9va3MgdGVzdCBraXQx
LzAtBgNVBAMMJm5lc3Rqcy1wYXltZW50LXdlYmhvb2tzIFBheVBhbCB0ZXN0IENB
MCAXDTI2MTIwNzEzMjgzN1oYDzIxMjYxMTEzMTMyODM3WjAUMRIwEAYDVQQDDAkx
MjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATJ0el8v5MJyuuk7rKM
xVls2FVHsncWMOtViPkSNTDPMfM2IqKIJtiVpM8Pa+o8rE+YFs4RM8Y32ak9Y+PH
OXfSo4GHMIGEMAwGA1UdEwEB/wQCMAAwDgYDVR0PAQH/BAQDAgeAMBMGA1UdJQQM
MAoGCCsGAQUFBwMBMA8GA1UdEQQIMAaHBH8AAAEwHQYDVR0OBBYEFJo9SvsnnIXI
hR8nCMJvw/8mLhViMB8GA1UdIwQYMBaAFPaQw4fbuu3nzcP74GlYgQO5kb7QMA0G
CSqGSIb3DQEBCwUAA4IBAQAV+8bqCk1RB3rdS9Rkxlc4elo7ozNJ9p+NieXfpXfU
zwXhNjiKvkN4FHkr0Z5pbuQb7TE6yaWzILgFPO9rqgUsQGt17kLDZW08h9ng0noi
jhxhrf6FgYh9hrHE0HhcGNubgL16YV1QZbW7wvQtlIIWVo116XdYyghmUwtYwyJN
1h8aJ1741BVv899HWA00lyfwpkwog7ns0m1jY1DChJoIMMoVzFgtF5XPqSpaoLjz
GtF1QpaBSmajev60v1Po/9yC6vJkdMY+LSwwUdul3kBhW10WEHCEMINtOm+kPDBr
xVHON1dqjoRW30q3q6EX1Locbfu6lI5W8e6dHGVcL+1L
-----END CERTIFICATE-----
`;
const TLS_KEY_PEM = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8S1ZBJMIPIiiZFKb
7riUqu4/bUuF1byEg7t9HHmwbuShRANCAATJ0el8v5MJyuuk7rKMxVls2FVHsncW
MOtViPkSNTDPMfM2IqKIJtiVpM8Pa+o8rE+YFs4RM8Y32ak9Y+PHOXfS
-----END PRIVATE KEY-----
`;

/** Where PayPal serves a certificate, and the path the kit's server serves its signing certificate at. */
export const PAYPAL_TEST_CERT_PATH = '/v1/notifications/certs/CERT-nestjs-payment-webhooks-test';

/** What PayPal signs: the transmission's id and time, the webhook's id, and the CRC32 of the raw body. */
export function paypalSignedString(transmissionId: string, transmissionTime: string, webhookId: string, body: string | Buffer): string {
  return `${transmissionId}|${transmissionTime}|${webhookId}|${crc32(typeof body === 'string' ? Buffer.from(body) : body)}`;
}

/** The headers PayPal sends with a delivery of `body`, signed with `privateKeyPem` (default the kit's key). */
export interface PaypalSignOptions {
  /** `PAYPAL-CERT-URL`: where the certificate is served (the kit's server: `server.certUrl`). */
  certUrl: string;
  /** `PAYPAL-TRANSMISSION-ID`; default a new UUID, as PayPal sends one per transmission. */
  transmissionId?: string;
  /** `PAYPAL-TRANSMISSION-TIME`, signed as given; default now, `YYYY-MM-DDTHH:MM:SSZ`. */
  transmissionTime?: string;
  /** The signing key (PEM); default the kit's. */
  privateKeyPem?: string;
  /** `PAYPAL-AUTH-ALGO`; default `SHA256withRSA`, the only one PayPal uses. */
  authAlgo?: string;
}

/** PayPal's transmission time of an instant: ISO 8601 to the second, UTC. */
export function paypalTransmissionTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The five signature headers PayPal sends with `body` for the webhook `webhookId` (and its content type). */
export function paypalHeaders(webhookId: string, body: string | Buffer, options: PaypalSignOptions): Record<string, string> {
  const transmissionId = options.transmissionId ?? randomUUID();
  const transmissionTime = options.transmissionTime ?? paypalTransmissionTime(Date.now());
  const signer = createSign('RSA-SHA256');
  signer.update(paypalSignedString(transmissionId, transmissionTime, webhookId, body));
  return {
    'content-type': 'application/json',
    'paypal-transmission-id': transmissionId,
    'paypal-transmission-time': transmissionTime,
    'paypal-transmission-sig': signer.sign(options.privateKeyPem ?? PAYPAL_TEST_SIGNING_KEY_PEM, 'base64'),
    'paypal-cert-url': options.certUrl,
    'paypal-auth-algo': options.authAlgo ?? 'SHA256withRSA',
    'paypal-auth-version': 'v2',
  };
}

/** What the kit's server answers at a path: a body (200), or a handler of its own. */
export type PaypalCertRoute = string | ((req: IncomingMessage, res: ServerResponse) => void);

/** The kit's HTTPS server: it serves the signing certificate as PayPal serves its own. */
export interface PaypalCertServer {
  port: number;
  /** `127.0.0.1:<port>`: what the endpoint's `certHosts` lists. */
  certHost: string;
  /** The URL of the kit's signing certificate (`PAYPAL-CERT-URL`). */
  certUrl: string;
  /** The CA the endpoint must trust (`caPem`, or a `caFile` holding it). */
  caPem: string;
  /** The URL of a path on this server. */
  urlFor(path: string): string;
  /** Serves `route` at `path` from now on (a PEM text, or a handler). */
  serve(path: string, route: PaypalCertRoute): void;
  /** Requests received, in all and by path. */
  readonly requests: number;
  requestsTo(path: string): number;
  close(): Promise<void>;
}

/**
 * Starts the kit's certificate server on 127.0.0.1 (`options.port`, default a free one), with TLS by
 * the kit's CA. It serves the signing certificate at PAYPAL_TEST_CERT_PATH, `routes` besides, and
 * 404 elsewhere.
 */
export async function startPaypalCertServer(routes: Record<string, PaypalCertRoute> = {}, options: { port?: number } = {}): Promise<PaypalCertServer> {
  const table = new Map<string, PaypalCertRoute>([[PAYPAL_TEST_CERT_PATH, PAYPAL_TEST_SIGNING_CERT_PEM], ...Object.entries(routes)]);
  const seen = new Map<string, number>();
  let requests = 0;
  const server = https.createServer({ cert: TLS_CERT_PEM, key: TLS_KEY_PEM }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    requests++;
    seen.set(path, (seen.get(path) ?? 0) + 1);
    const route = table.get(path);
    if (route === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"name":"RESOURCE_NOT_FOUND"}');
    } else if (typeof route === 'string') {
      res.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(route);
    } else {
      route(req, res);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base = `https://127.0.0.1:${port}`;
  return {
    port,
    certHost: `127.0.0.1:${port}`,
    certUrl: `${base}${PAYPAL_TEST_CERT_PATH}`,
    caPem: PAYPAL_TEST_CA_PEM,
    urlFor: (path) => `${base}${path}`,
    serve: (path, route) => void table.set(path, route),
    get requests() {
      return requests;
    },
    requestsTo: (path) => seen.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
