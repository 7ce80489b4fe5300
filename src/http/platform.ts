import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The few things the module does with a request or a response that differ between Express and
 * Fastify, in one place. Express hands Nest the Node objects themselves (extended); Fastify hands
 * its own wrappers, which keep the Node objects as `raw`.
 */

/** The Node request under an Express or a Fastify request. */
export function rawRequest(req: unknown): IncomingMessage {
  const raw = (req as { raw?: IncomingMessage }).raw;
  return raw && typeof raw.on === 'function' ? raw : (req as IncomingMessage);
}

/** The Node response under an Express response or a Fastify reply. */
export function rawResponse(res: unknown): ServerResponse {
  const raw = (res as { raw?: ServerResponse }).raw;
  return raw && typeof raw.setHeader === 'function' ? raw : (res as ServerResponse);
}

function isFastifyReply(res: unknown): res is { code(status: number): { send(body: unknown): unknown }; header(name: string, value: string): unknown } {
  return typeof (res as { code?: unknown }).code === 'function' && typeof (res as { send?: unknown }).send === 'function';
}

/** Answers `status` with a JSON body, on either platform. */
export function sendJson(res: unknown, status: number, body: unknown): void {
  if (isFastifyReply(res)) {
    res.code(status).send(body);
    return;
  }
  const express = res as { status?: (s: number) => { json(b: unknown): void } };
  if (typeof express.status === 'function') {
    express.status(status).json(body);
    return;
  }
  // A bare Node response (a middleware or hook that answers before the framework does).
  const node = rawResponse(res);
  const text = JSON.stringify(body);
  node.statusCode = status;
  node.setHeader('Content-Type', 'application/json; charset=utf-8');
  node.setHeader('Content-Length', Buffer.byteLength(text));
  node.end(text);
}

export function setHeader(res: unknown, name: string, value: string): void {
  if (isFastifyReply(res)) res.header(name, value);
  else rawResponse(res).setHeader(name, value);
}

/** Adds `value` to a header that may already have one (a second `Content-Security-Policy`: both apply). */
export function addHeaderValue(res: unknown, name: string, value: string): void {
  const reply = res as { getHeader?: (n: string) => unknown; header?: (n: string, v: unknown) => unknown };
  const existing = isFastifyReply(res) ? reply.getHeader?.(name) : rawResponse(res).getHeader(name);
  const values = existing === undefined ? [] : ([existing].flat() as unknown[]).map(String);
  if (values.includes(value)) return;
  const all = [...values, value];
  if (isFastifyReply(res)) reply.header!(name, all.length === 1 ? all[0] : all);
  else rawResponse(res).setHeader(name, all.length === 1 ? all[0] : all);
}

/** The path of a request without its query string. */
export function requestPath(req: unknown): string {
  const url = rawRequest(req).url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The content type of each webhook request whose body is hidden (absent: it had none). */
const hiddenTypes = new WeakMap<IncomingMessage, string | undefined>();
/** The content type Fastify sees on a webhook route; its parser leaves the bytes unread. */
export const RAW_WEBHOOK_CONTENT_TYPE = 'application/x-payment-webhooks-raw';

/**
 * Hides a webhook delivery's body from the app's body parsers, whatever they are configured to
 * parse: body-parser (Express) skips a request without a content type, and Fastify hands the one
 * it gets here to a parser that reads nothing. The signature guard reads the bytes itself, then
 * gives the header back with `restoreContentType`. The header is set to undefined rather than
 * deleted (a delete turns the headers object into a slow dictionary for the rest of the request),
 * and what it was is kept aside rather than on the request (a new property changes its shape).
 */
export function hideBodyFromParsers(req: IncomingMessage, platform: 'express' | 'fastify'): void {
  if (hiddenTypes.has(req)) return;
  hiddenTypes.set(req, req.headers['content-type']);
  req.headers['content-type'] = platform === 'fastify' ? RAW_WEBHOOK_CONTENT_TYPE : undefined;
}

export function restoreContentType(req: IncomingMessage): void {
  if (!hiddenTypes.has(req)) return;
  const original = hiddenTypes.get(req);
  hiddenTypes.delete(req);
  if (original === undefined) delete req.headers['content-type'];
  else req.headers['content-type'] = original;
}

/** `application/json` or a `+json` type such as `application/merge-patch+json`, parameters allowed. */
export function isJsonContentType(value: string | undefined): boolean {
  return value !== undefined && /^\s*application\/(?:[a-z0-9!#$&^_.-]+\+)?json\s*(?:;|$)/i.test(value);
}
