import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../payment-webhooks.constants';
import { DomainError } from './domain-error';

/** Hashing first gives equal lengths, so the comparison time says nothing about the token. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The admin token on every route but webhooks and health: `Authorization: Bearer <token>`, or
 * basic auth with any user and the token as password (so a browser can open the Swagger UI).
 * No token configured: the routes answer 503 admin_disabled, never open.
 */
@Injectable()
export class AdminAuthGuard implements CanActivate {
  private readonly expected: Buffer | null;

  constructor(@Inject(PW_OPTIONS) options: ResolvedOptions) {
    this.expected = options.adminToken ? digest(options.adminToken) : null;
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) throw new DomainError('AUTH.ADMIN_DISABLED', 'no ADMIN_TOKEN is configured');
    const presented = presentedToken(context.switchToHttp().getRequest<Request>().headers.authorization);
    if (presented === null || !timingSafeEqual(digest(presented), this.expected)) {
      throw new DomainError('AUTH.UNAUTHORIZED', 'missing or wrong admin token');
    }
    return true;
  }
}

export function presentedToken(header: string | undefined): string | null {
  if (!header) return null;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return null;
  if (scheme.toLowerCase() === 'bearer') return value.trim();
  if (scheme.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value.trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return null;
}
