import { Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { maskedAddress, unmappedAddress } from '../common/ip-address';
import type { TuningOptions } from '../config/options';

/** The knobs of the HTTP server, from the tuning (PW_TUNING). */
export type ServerLimits = Pick<TuningOptions, 'httpRequestTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpKeepAliveTimeoutMs' | 'httpMaxConnections'>;

const APPLIED = Symbol('pw-server-limits');

const UNAVAILABLE_BODY = '{"error":"unavailable"}';
const UNAVAILABLE =
  'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n' +
  `Content-Length: ${UNAVAILABLE_BODY.length}\r\nConnection: close\r\n\r\n${UNAVAILABLE_BODY}`;

/**
 * Bounds what a client can make the HTTP server hold. Node's defaults keep a
 * request whose body trickles in for 300 s, check that only every 30 s, and take any number of
 * connections. Applied to the Node server under Express or Fastify, before it listens:
 *
 * - `requestTimeout` (`httpRequestTimeoutMs`, 8 s) and `headersTimeout` (`httpHeadersTimeoutMs`,
 *   5 s): a request not arrived in full by then is answered `503 {"error":"unavailable"}` (a
 *   transient failure: the sender retries; Node would say 408, which some providers
 *   take as final) and its connection closed. Node checks them every `connectionsCheckingInterval`,
 *   set here to a quarter of the headers timeout (at most 1 s), so the cut comes on time. Chosen
 *   under 10 s so that an answer, even this one, comes well inside the 10 s a provider waits.
 * - `keepAliveTimeout` (`httpKeepAliveTimeoutMs`, 5 s): an idle connection closes. Behind a load
 *   balancer, set it above the balancer's idle timeout.
 * - `maxConnections` (`httpMaxConnections`, 4096, lowered to what the open-file limit allows, see
 *   connectionCapacity): connections past it are closed on arrival; and one address's past a
 *   quarter of it (shareConnections).
 *
 * Called on a server that already listens, everything applies but the checking interval, which
 * Node reads when listening starts (the cut then comes up to 30 s late).
 */
export function applyServerLimits(server: Server, limits: ServerLimits): void {
  const requestTimeout = limits.httpRequestTimeoutMs;
  // Node requires the headers' bound within the whole request's.
  const headersTimeout = Math.min(limits.httpHeadersTimeoutMs, requestTimeout);
  server.requestTimeout = requestTimeout;
  server.headersTimeout = headersTimeout;
  server.keepAliveTimeout = limits.httpKeepAliveTimeoutMs;
  capConnections(server, limits.httpMaxConnections, 'set');
  shareConnections(server);
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.max(
    25,
    Math.min(1_000, Math.floor(headersTimeout / 4)),
  );
  const holder = server as Server & { [APPLIED]?: true };
  if (holder[APPLIED]) return;
  holder[APPLIED] = true;
  // First in line: a timeout is answered 503 here, and the socket destroyed, so a framework's own
  // handler (Fastify's) finds nothing left to answer.
  server.prependListener('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      if (nothingAnswered(socket)) socket.write(UNAVAILABLE);
      socket.destroy();
      return;
    }
    // Alone (Express), this listener stands in for Node's own answer to a client error.
    if (server.listenerCount('clientError') === 1) answerAsNodeWould(err, socket);
  });
}

/**
 * Descriptors kept back from connections, for what else the process opens: its database pools,
 * Redis connections, log and certificate files, the event loop's own.
 */
export const OPEN_FILES_RESERVE = 256;

/** The soft limit of open files in the text of `/proc/self/limits`; null when unlimited or absent. */
export function parseOpenFileLimit(limits: string): number | null {
  const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
  return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : null;
}

/** The process's soft limit of open files (Linux); null where it cannot be read. */
export function readOpenFileLimit(): number | null {
  try {
    return parseOpenFileLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return null;
  }
}

/**
 * The connections the process can accept: the configured maximum, or fewer when the open-file
 * limit leaves less room once the reserve (at most half the limit) is kept back. Past the limit,
 * accept() fails for every client alike, so one address's share must be a share of this.
 */
export function connectionCapacity(configured: number, openFiles: number | null = readOpenFileLimit()): number {
  if (openFiles === null) return configured;
  return Math.max(1, Math.min(configured, openFiles - Math.min(OPEN_FILES_RESERVE, Math.floor(openFiles / 2))));
}

const CAP_LOGGED = Symbol('pw-connection-cap-logged');

/**
 * Sets `server.maxConnections` to the capacity of `configured` connections (`'set'`), or lowers
 * it to that (`'lower'`: a host's own lower setting stays). Says so in one line, once per value,
 * when the open-file limit lowered it.
 */
export function capConnections(server: Server, configured: number, mode: 'set' | 'lower', openFiles: number | null = readOpenFileLimit()): void {
  const capacity = connectionCapacity(configured, openFiles);
  const current = server.maxConnections;
  server.maxConnections = mode === 'lower' && current !== undefined && current !== null && current < capacity ? current : capacity;
  const holder = server as Server & { [CAP_LOGGED]?: number };
  if (capacity < configured && holder[CAP_LOGGED] !== capacity) {
    holder[CAP_LOGGED] = capacity;
    new Logger('PaymentWebhooks').warn(
      `the open-file limit (${openFiles}) allows ${capacity} connections, not httpMaxConnections ${configured}: ` +
        `raise it (ulimit -n, LimitNOFILE) to accept more; one address holds at most ${shareOf(capacity)}`,
    );
  }
}

/** One address's share of `maxConnections` connections: a quarter (at least one). */
export function shareOf(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 4));
}

/** Open connections per address of one server, and which addresses are exempt. */
interface ConnectionShares {
  open: Map<string, number>;
  isTrustedProxy: (address: string) => boolean;
  warnings: ShareWarnings;
}

/**
 * One line per network and minute when connections past an address's share are closed: silent
 * resets would be hard to tell from a network fault, and a load balancer not named in
 * `trustedProxies` is the usual cause. The networks it remembers are bounded.
 */
class ShareWarnings {
  private readonly last = new Map<string, number>();
  private readonly logger = new Logger('PaymentWebhooks');

  closing(address: string, open: number): void {
    const network = maskedAddress(address);
    const now = Date.now();
    const before = this.last.get(network);
    if (before !== undefined && now - before < 60_000) return;
    if (this.last.size >= 1_000) this.last.clear();
    this.last.set(network, now);
    this.logger.warn(
      `connections from ${network} past one address's share (${open} open) are closed on arrival; ` +
        'if that is a proxy or load balancer in front of the service, name it in trustedProxies (TRUSTED_PROXIES)',
    );
  }
}
const SHARES = Symbol('pw-connection-shares');

/**
 * One address (a socket's remote address) holds at most a quarter of the connections the server
 * accepts (`server.maxConnections`, read at each connection, so it follows whoever sets it); a
 * connection past that is closed on arrival, before any byte of it is read. Otherwise a sender
 * trickling headers on thousands of sockets fills the cap, and every other client's connection is
 * closed unread. A trusted proxy (`isTrustedProxy`, given by the module's app, ClientAddresses) is
 * many clients and is exempt. Applying it again changes only the exemption.
 */
export function shareConnections(server: Server, isTrustedProxy?: (address: string) => boolean): void {
  const holder = server as Server & { [SHARES]?: ConnectionShares };
  const installed = holder[SHARES];
  if (installed) {
    if (isTrustedProxy) installed.isTrustedProxy = isTrustedProxy;
    return;
  }
  const shares: ConnectionShares = { open: new Map(), isTrustedProxy: isTrustedProxy ?? (() => false), warnings: new ShareWarnings() };
  holder[SHARES] = shares;
  // First in line: a connection over its share is reset before the HTTP server reads from it.
  server.prependListener('connection', (socket: Socket) => {
    const remote = socket.remoteAddress;
    if (remote === undefined) return;
    const address = unmappedAddress(remote);
    if (shares.isTrustedProxy(address)) return;
    const max = server.maxConnections;
    const open = shares.open.get(address) ?? 0;
    if (typeof max === 'number' && Number.isFinite(max) && open >= shareOf(max)) {
      shares.warnings.closing(address, open);
      // A reset leaves no TIME_WAIT behind on this side for a flood of them.
      socket.resetAndDestroy();
      return;
    }
    shares.open.set(address, open + 1);
    socket.once('close', () => {
      const left = shares.open.get(address)! - 1;
      if (left === 0) shares.open.delete(address);
      else shares.open.set(address, left);
    });
  });
}

/**
 * Whether an answer can still be written without corrupting the stream: no response in flight on
 * the socket, or none of its header sent yet (Node's own test).
 */
function nothingAnswered(socket: Socket): boolean {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  return socket.writable && (!inFlight || !inFlight.headersSent);
}

/** Node's answer to a client error when nothing listens for `clientError` (lib/_http_server.js). */
function answerAsNodeWould(err: NodeJS.ErrnoException, socket: Socket): void {
  if (socket.destroyed) return;
  if (err.code !== 'ECONNRESET' && nothingAnswered(socket)) {
    const status =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? '431 Request Header Fields Too Large'
        : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
          ? '413 Payload Too Large'
          : '400 Bad Request';
    socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  }
  socket.destroy(err);
}
