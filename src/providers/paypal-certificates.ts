import { createHash, KeyObject, X509Certificate } from 'node:crypto';
import * as https from 'node:https';
import { rootCertificates } from 'node:tls';
import { ExpiringSet, SenderBudgets, SenderLimits } from './call-out';

/** The names PayPal's signing certificates are issued to (live, sandbox): the subject CN or a DNS SAN must be one. */
export const PAYPAL_CERTIFICATE_NAMES: readonly string[] = ['messageverificationcerts.paypal.com', 'messageverificationcerts.sandbox.paypal.com'];

/** Where PayPal serves its certificates (`PAYPAL-CERT-URL`), live and sandbox: the default `certHosts`. */
export const DEFAULT_CERT_HOSTS: readonly string[] = ['api.paypal.com', 'api.sandbox.paypal.com'];

/**
 * DigiCert SHA2 Extended Validation Server CA (valid until 2028-10-22), the public intermediate
 * that issues PayPal's signing certificates. PayPal's URL serves the leaf alone, so the chain to
 * the trust store's DigiCert High Assurance EV Root CA is completed with this copy (as PayPal's
 * Java and .NET SDKs bundle it). It is only ever a link, never trusted by itself.
 */
export const DIGICERT_SHA2_EV_SERVER_CA = `-----BEGIN CERTIFICATE-----
MIIEtjCCA56gAwIBAgIQDHmpRLCMEZUgkmFf4msdgzANBgkqhkiG9w0BAQsFADBs
MQswCQYDVQQGEwJVUzEVMBMGA1UEChMMRGlnaUNlcnQgSW5jMRkwFwYDVQQLExB3
d3cuZGlnaWNlcnQuY29tMSswKQYDVQQDEyJEaWdpQ2VydCBIaWdoIEFzc3VyYW5j
ZSBFViBSb290IENBMB4XDTEzMTAyMjEyMDAwMFoXDTI4MTAyMjEyMDAwMFowdTEL
MAkGA1UEBhMCVVMxFTATBgNVBAoTDERpZ2lDZXJ0IEluYzEZMBcGA1UECxMQd3d3
LmRpZ2ljZXJ0LmNvbTE0MDIGA1UEAxMrRGlnaUNlcnQgU0hBMiBFeHRlbmRlZCBW
YWxpZGF0aW9uIFNlcnZlciBDQTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
ggEBANdTpARR+JmmFkhLZyeqk0nQOe0MsLAAh/FnKIaFjI5j2ryxQDji0/XspQUY
uD0+xZkXMuwYjPrxDKZkIYXLBxA0sFKIKx9om9KxjxKws9LniB8f7zh3VFNfgHk/
LhqqqB5LKw2rt2O5Nbd9FLxZS99RStKh4gzikIKHaq7q12TWmFXo/a8aUGxUvBHy
/Urynbt/DvTVvo4WiRJV2MBxNO723C3sxIclho3YIeSwTQyJ3DkmF93215SF2AQh
cJ1vb/9cuhnhRctWVyh+HA1BV6q3uCe7seT6Ku8hI3UarS2bhjWMnHe1c63YlC3k
8wyd7sFOYn4XwHGeLN7x+RAoGTMCAwEAAaOCAUkwggFFMBIGA1UdEwEB/wQIMAYB
Af8CAQAwDgYDVR0PAQH/BAQDAgGGMB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEF
BQcDAjA0BggrBgEFBQcBAQQoMCYwJAYIKwYBBQUHMAGGGGh0dHA6Ly9vY3NwLmRp
Z2ljZXJ0LmNvbTBLBgNVHR8ERDBCMECgPqA8hjpodHRwOi8vY3JsNC5kaWdpY2Vy
dC5jb20vRGlnaUNlcnRIaWdoQXNzdXJhbmNlRVZSb290Q0EuY3JsMD0GA1UdIAQ2
MDQwMgYEVR0gADAqMCgGCCsGAQUFBwIBFhxodHRwczovL3d3dy5kaWdpY2VydC5j
b20vQ1BTMB0GA1UdDgQWBBQ901Cl1qCt7vNKYApl0yHU+PjWDzAfBgNVHSMEGDAW
gBSxPsNpA/i/RwHUmCYaCALvY2QrwzANBgkqhkiG9w0BAQsFAAOCAQEAnbbQkIbh
hgLtxaDwNBx0wY12zIYKqPBKikLWP8ipTa18CK3mtlC4ohpNiAexKSHc59rGPCHg
4xFJcKx6HQGkyhE6V6t9VypAdP3THYUYUN9XR3WhfVUgLkc3UHKMf4Ib0mKPLQNa
2sPIoc4sUqIAY+tzunHISScjl2SFnjgOrWNoPLpSgVh5oywM395t6zHyuqB8bPEs
1OG9d4Q3A84ytciagRpKkk47RpqF/oOi+Z6Mo8wNXrM9zwR4jxQUezKcxwCmXMS1
oVWNWlZopCJwqjyBcdmdqEU79OX2olHdx3ti6G8MdOu42vi/hw15UJGQmxg7kVkn
8TUoE6smftX3eg==
-----END CERTIFICATE-----
`;

/** The most a certificate answer may hold: a leaf and a few intermediates are a few KiB. */
export const MAX_CERTIFICATE_BYTES = 16 * 1024;

/** How an answer from a certificate URL went. */
export type CertificateAnswer =
  /** A 200 of at most the limit: its text (PEM, the leaf first). */
  | { outcome: 'ok'; pem: string }
  /** An answer that can never carry PayPal's certificate (a redirect, a 404, too long): `401`. */
  | { outcome: 'refused'; reason: string }
  /** No usable answer now (a network failure, a timeout, a 5xx): `503`, the sender retries. */
  | { outcome: 'unavailable'; reason: string };

/** What a fetch of a certificate URL is given. */
export interface CertificateRequest {
  /** The CA certificates the TLS connection trusts (PEM); undefined: Node's own store. */
  tlsCa?: string;
  timeoutMs: number;
  maxBytes: number;
}

/** Fetches one certificate URL; never throws (every failure is an answer). */
export type CertificateFetcher = (url: URL, request: CertificateRequest) => Promise<CertificateAnswer>;

/**
 * `GET url` with Node's `https`: no redirect followed, no more than `maxBytes` read, the whole
 * exchange within `timeoutMs`, nothing sent but the request line and Host.
 */
export const fetchCertificateOverHttps: CertificateFetcher = (url, { tlsCa, timeoutMs, maxBytes }) =>
  new Promise<CertificateAnswer>((resolve) => {
    let settled = false;
    const done = (answer: CertificateAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(answer);
    };
    const tooLong: CertificateAnswer = { outcome: 'refused', reason: `answered more than ${maxBytes} bytes` };
    const request = https.get(url, { agent: false, ...(tlsCa === undefined ? {} : { ca: tlsCa }), headers: { accept: '*/*' } }, (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400) return done({ outcome: 'refused', reason: `answered ${status}: a redirect is not followed` });
      if (status >= 500) return done({ outcome: 'unavailable', reason: `answered ${status}` });
      if (status !== 200) return done({ outcome: 'refused', reason: `answered ${status}` });
      if (Number(response.headers['content-length']) > maxBytes) return done(tooLong);
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return done(tooLong);
        chunks.push(chunk);
      });
      response.on('end', () => done({ outcome: 'ok', pem: Buffer.concat(chunks).toString('latin1') }));
      response.on('error', (err) => done({ outcome: 'unavailable', reason: err.message }));
      response.on('aborted', () => done({ outcome: 'unavailable', reason: 'the answer was cut short' }));
    });
    request.on('error', (err) => done({ outcome: 'unavailable', reason: err.message }));
    const timer = setTimeout(() => done({ outcome: 'unavailable', reason: `no whole answer within ${timeoutMs} ms` }), timeoutMs);
    timer.unref?.();
  });

/**
 * What a certificate must chain to: the CA certificates of an endpoint's `caFile` (or `caPem`), or
 * Node's trust store.
 */
export interface CertificateTrust {
  /** Names the anchors (a digest of their fingerprints, or `system`), never their text: what the memory of refused URLs is keyed by. */
  identity: string;
  anchors: readonly X509Certificate[];
  /** What the TLS connection to the URL trusts: the trust store, plus the endpoint's CAs. */
  tlsCa?: string;
}

/** A PEM certificate block: its base64 and line breaks, nothing else. */
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM text, in order (what is not a certificate block is skipped: a bundle may carry comments). */
export function certificatesOf(pem: string): X509Certificate[] {
  return (pem.match(PEM_BLOCK) ?? []).map((block) => new X509Certificate(block));
}

let systemTrust: CertificateTrust | undefined;

/** Node's trust store (`tls.rootCertificates`), parsed once. */
export function systemCertificateTrust(): CertificateTrust {
  systemTrust ??= { identity: 'system', anchors: rootCertificates.flatMap((pem) => certificatesOf(pem)) };
  return systemTrust;
}

/** Trust in the CA certificates of a PEM bundle; throws (for the start-up line) when it holds none. */
export function bundleTrust(pem: string): CertificateTrust {
  const anchors = certificatesOf(pem);
  if (anchors.length === 0) throw new Error('holds no PEM certificate');
  const identity = createHash('sha256').update(anchors.map((c) => c.fingerprint256).sort().join('\n')).digest('base64url');
  return { identity, anchors, tlsCa: [...rootCertificates, ...anchors.map((c) => c.toString())].join('\n') };
}

/** A certificate that passed every check: its key, and the instants between which its chain is valid. */
export interface VerifiedCertificate {
  publicKey: KeyObject;
  notBefore: number;
  notAfter: number;
}

const bundledIntermediates = (): X509Certificate[] => (bundled ??= certificatesOf(DIGICERT_SHA2_EV_SERVER_CA));
let bundled: X509Certificate[] | undefined;

const MAX_CHAIN = 5;

function issues(issuer: X509Certificate, subject: X509Certificate): boolean {
  try {
    return subject.checkIssued(issuer) && subject.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

function validAt(cert: X509Certificate, nowMs: number): boolean {
  return Date.parse(cert.validFrom) <= nowMs && nowMs <= Date.parse(cert.validTo);
}

/** Whether the leaf names one of PayPal's signing names, in its subject CN or a DNS SAN (exactly, any case). */
export function namesPaypal(cert: X509Certificate): boolean {
  const names = [
    ...cert.subject.split('\n').flatMap((line) => (line.startsWith('CN=') ? [line.slice(3)] : [])),
    ...(cert.subjectAltName ?? '').split(', ').flatMap((entry) => (entry.startsWith('DNS:') ? [entry.slice(4)] : [])),
  ];
  return names.some((name) => PAYPAL_CERTIFICATE_NAMES.includes(name.toLowerCase()));
}

/**
 * Checks what a certificate URL answered: PEM certificate blocks and whitespace only (a page that
 * reflects what was asked, with a certificate among its text, is no certificate answer), the leaf
 * (the first certificate) names PayPal's signing name, and chains, through the intermediates the
 * answer carries or the bundled DigiCert one, to a trusted anchor, every link valid at `nowMs`.
 * Returns why not, or the leaf's key and the chain's validity window.
 */
export function verifyCertificate(pem: string, trust: CertificateTrust, nowMs: number): VerifiedCertificate | { refused: string } {
  const blocks = pem.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) return { refused: 'the answer holds no PEM certificate' };
  if (!/^[\r\n\t ]*$/.test(pem.replace(PEM_BLOCK, ''))) return { refused: 'the answer holds more than PEM certificates' };
  let served: X509Certificate[];
  try {
    served = blocks.map((block) => new X509Certificate(block));
  } catch {
    return { refused: 'the answer holds a certificate that does not parse' };
  }
  const [leaf, ...carried] = served;
  if (!namesPaypal(leaf)) return { refused: `the certificate names none of ${PAYPAL_CERTIFICATE_NAMES.join(', ')}` };
  const links = [...carried, ...bundledIntermediates()].filter((c) => c.ca);
  let notBefore = Date.parse(leaf.validFrom);
  let notAfter = Date.parse(leaf.validTo);
  let current = leaf;
  for (let depth = 0; depth <= MAX_CHAIN; depth++) {
    if (!validAt(current, nowMs)) return { refused: `${depth === 0 ? 'the certificate' : 'a certificate of its chain'} is not valid now (${current.validFrom} to ${current.validTo})` };
    notBefore = Math.max(notBefore, Date.parse(current.validFrom));
    notAfter = Math.min(notAfter, Date.parse(current.validTo));
    // An anchor is trusted as it is (the operator put it there): its own validity bounds the chain.
    const anchor = trust.anchors.find((a) => a.fingerprint256 === current.fingerprint256 || issues(a, current));
    if (anchor) {
      if (!validAt(anchor, nowMs)) return { refused: 'the trusted CA it chains to is not valid now' };
      return { publicKey: leaf.publicKey, notBefore: Math.max(notBefore, Date.parse(anchor.validFrom)), notAfter: Math.min(notAfter, Date.parse(anchor.validTo)) };
    }
    const next = links.find((c) => c.fingerprint256 !== current.fingerprint256 && issues(c, current));
    if (!next) return { refused: 'the certificate does not chain to a trusted CA' };
    current = next;
  }
  return { refused: 'the certificate chain is too long' };
}

/** How much checking certificates may cost one endpoint, and one sender address of it. */
export interface CertificateLimits {
  /** Longest wait for a certificate URL's whole answer (default 3000 ms: inside the receive bound of 4.5 s). */
  fetchTimeoutMs: number;
  /** Certificates cached, by URL (least recently used dropped first; default 1000). */
  maxCachedCertificates: number;
  /** Fetches the endpoint has unanswered at once; past it a delivery naming an uncached URL answers 503 unfetched (default 8). */
  maxFetchesInFlight: number;
  /** How long a URL whose answer failed its checks (or was a 404, a redirect…) is not fetched again (default 60000 ms). */
  refusedMemoryMs: number;
  /** URLs remembered as refused (default 10000). */
  maxRememberedRefusals: number;
  /** What one sender address may make the endpoint fetch. */
  sender: SenderLimits;
}

export const DEFAULT_CERTIFICATE_LIMITS: CertificateLimits = {
  fetchTimeoutMs: 3_000,
  maxCachedCertificates: 1_000,
  maxFetchesInFlight: 8,
  refusedMemoryMs: 60_000,
  maxRememberedRefusals: 10_000,
  // Two fetches at once per address; an address whose fetches came to nothing for more than 60 URLs in a minute is refused 429.
  sender: { inFlight: 2, knownInFlight: 0, lookups: 0, notFound: 60, windowMs: 60_000, maxSenders: 10_000 },
};

/**
 * The fetcher's answer, or \`unavailable\` a little after its own deadline: a fetcher (a host's, a
 * test's) that never answers must not hold the URL's fetch, and the endpoint's share, for good.
 */
function answerWithin(answer: Promise<CertificateAnswer>, timeoutMs: number): Promise<CertificateAnswer> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CertificateAnswer>((resolve) => {
    timer = setTimeout(() => resolve({ outcome: 'unavailable', reason: `no answer within ${timeoutMs} ms` }), timeoutMs + 500);
    timer.unref?.();
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** What checking a delivery's signature against the certificate at its URL gave. */
export type SignatureOutcome =
  | { ok: true }
  /** `invalid_signature`: the URL, its certificate or the signature can never verify; `rate_limited`: the sender guesses. */
  | { ok: false; error: 'invalid_signature' | 'rate_limited'; reason: string }
  /** `503`: no answer now, the sender retries. */
  | { ok: false; error: 'unavailable'; reason: string };

type FetchResult = { verified: VerifiedCertificate } | { refused: string } | { unavailable: string };

/** Whether a certificate's key verifies the delivery's signature. */
export type SignatureCheck = (publicKey: KeyObject) => boolean;

/**
 * One endpoint's PayPal certificates, fetched from the URLs deliveries name and checked once per
 * URL: a cache of what passed (until it expires, at most `maxCachedCertificates`), one fetch at a
 * time per URL (deliveries naming a URL being fetched wait for that fetch), and bounds on what
 * unsigned deliveries can make it fetch: at once, per sender address, and a minute's memory of URLs
 * refused (docs/security.md#paypals-certificate). A cached certificate answers whatever those
 * budgets say: PayPal's own deliveries name it.
 */
export class PaypalCertificates {
  private readonly cache = new Map<string, VerifiedCertificate>();
  private readonly running = new Map<string, Promise<FetchResult>>();
  private readonly senders: SenderBudgets;
  private readonly refused: ExpiringSet;
  private fetching = 0;

  constructor(
    private readonly trust: CertificateTrust,
    private readonly limits: CertificateLimits = DEFAULT_CERTIFICATE_LIMITS,
    private readonly fetcher: CertificateFetcher = fetchCertificateOverHttps,
  ) {
    this.senders = new SenderBudgets(limits.sender);
    this.refused = new ExpiringSet(limits.maxRememberedRefusals, limits.refusedMemoryMs);
  }

  /** Certificates cached now (for tests and metrics). */
  get cached(): number {
    return this.cache.size;
  }

  /** Fetches unanswered now (for tests). */
  get inFlight(): number {
    return this.fetching;
  }

  /**
   * Whether the certificate at `url` (already checked against the endpoint's hosts and normalised,
   * so that one certificate has one key) verifies the signature, checked at `nowMs`. A fetch this
   * delivery started that ends in no verified signature is counted against its sender as a refused
   * URL is: a sender that makes the service fetch, whatever it names, pays for what came to nothing.
   */
  async verify(url: URL, signatureOf: SignatureCheck, context: { sender: string; nowMs: number }): Promise<SignatureOutcome> {
    const { sender, nowMs } = context;
    const href = url.href;
    const cached = this.fresh(href, nowMs);
    if (cached) return signed(cached, signatureOf);
    // A digest: what the memories hold per URL is bounded whatever the URL.
    const memoryKey = createHash('sha256').update(`${this.trust.identity}\n${href}`).digest('base64url');
    if (this.refused.has(memoryKey, nowMs)) return { ok: false, error: 'invalid_signature', reason: 'the URL was refused within the last minute' };
    let result = this.running.get(href);
    const starts = result === undefined;
    if (!result) {
      if (this.senders.limited(sender, nowMs)) {
        return { ok: false, error: 'rate_limited', reason: `the sender's fetches came to nothing for more than ${this.limits.sender.notFound} certificate URLs within a minute` };
      }
      if (this.fetching >= this.limits.maxFetchesInFlight) return { ok: false, error: 'unavailable', reason: `${this.fetching} certificate fetches are unanswered` };
      if (!this.senders.take(sender, 'unknown')) return { ok: false, error: 'unavailable', reason: 'the sender has its share of certificate fetches unanswered' };
      result = this.fetch(href, url, memoryKey, nowMs, sender);
    }
    const outcome = await result;
    let answer: SignatureOutcome;
    if ('verified' in outcome) {
      const { verified } = outcome;
      answer = nowMs < verified.notBefore || nowMs > verified.notAfter ? { ok: false, error: 'invalid_signature', reason: 'the certificate is not valid now' } : signed(verified, signatureOf);
    } else if ('refused' in outcome) {
      answer = { ok: false, error: 'invalid_signature', reason: outcome.refused };
    } else {
      answer = { ok: false, error: 'unavailable', reason: outcome.unavailable };
    }
    if (starts && !answer.ok) this.senders.notFound(sender, memoryKey, nowMs);
    return answer;
  }

  private fresh(href: string, nowMs: number): VerifiedCertificate | undefined {
    const entry = this.cache.get(href);
    if (!entry) return undefined;
    if (nowMs > entry.notAfter) {
      this.cache.delete(href);
      return undefined;
    }
    // Least recently used last.
    this.cache.delete(href);
    this.cache.set(href, entry);
    return nowMs >= entry.notBefore ? entry : undefined;
  }

  /** One fetch of the URL, shared by the deliveries that name it while it runs. */
  private fetch(href: string, url: URL, memoryKey: string, nowMs: number, sender: string): Promise<FetchResult> {
    this.fetching++;
    const timeoutMs = this.limits.fetchTimeoutMs;
    const result = Promise.resolve()
      .then(() => answerWithin(this.fetcher(url, { tlsCa: this.trust.tlsCa, timeoutMs, maxBytes: MAX_CERTIFICATE_BYTES }), timeoutMs))
      .then(
        (answer): FetchResult => {
          if (answer.outcome === 'unavailable') return { unavailable: `${url.host} ${answer.reason}` };
          if (answer.outcome === 'refused') return { refused: `${url.host} ${answer.reason}` };
          const checked = verifyCertificate(answer.pem, this.trust, nowMs);
          return 'refused' in checked ? checked : { verified: checked };
        },
        (err: unknown): FetchResult => ({ unavailable: `the certificate fetch failed: ${(err as Error)?.message ?? String(err)}` }),
      )
      .then((outcome) => {
        if ('verified' in outcome) this.remember(href, outcome.verified);
        if ('refused' in outcome) this.refused.add(memoryKey, nowMs);
        return outcome;
      })
      .finally(() => {
        this.fetching--;
        this.senders.give(sender, 'unknown');
        this.running.delete(href);
      });
    this.running.set(href, result);
    return result;
  }

  private remember(href: string, verified: VerifiedCertificate): void {
    this.cache.delete(href);
    this.cache.set(href, verified);
    while (this.cache.size > this.limits.maxCachedCertificates) this.cache.delete(this.cache.keys().next().value as string);
  }
}

function signed(certificate: VerifiedCertificate, signatureOf: SignatureCheck): SignatureOutcome {
  return signatureOf(certificate.publicKey) ? { ok: true } : { ok: false, error: 'invalid_signature', reason: 'the signature does not verify' };
}
