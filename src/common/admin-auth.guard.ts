import { CanActivate, ExecutionContext } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
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
export class AdminAuthGuard implements CanActivate {
  private readonly expected: Buffer | null;

  constructor(adminToken: string | null) {
    this.expected = adminToken ? digest(adminToken) : null;
  }

  canActivate(context: ExecutionContext): boolean {
    this.check(context.switchToHttp().getRequest<{ headers: { authorization?: string } }>().headers.authorization);
    return true;
  }

  /** Throws AUTH.ADMIN_DISABLED or AUTH.UNAUTHORIZED; also used by the /docs middleware. */
  check(authorization: string | undefined): void {
    if (!this.expected) throw new DomainError('AUTH.ADMIN_DISABLED', 'no ADMIN_TOKEN is configured');
    const presented = presentedToken(authorization);
    if (presented === null || !timingSafeEqual(digest(presented), this.expected)) {
      throw new DomainError('AUTH.UNAUTHORIZED', 'missing or wrong admin token');
    }
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
