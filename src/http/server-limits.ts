import type { Server } from 'node:http';
import type { Socket } from 'node:net';
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
 * - `maxConnections` (`httpMaxConnections`, 4096): connections past it are closed on arrival.
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
  server.maxConnections = limits.httpMaxConnections;
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
