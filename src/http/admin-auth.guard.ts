import { CanActivate, ExecutionContext } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../common/domain-error';

/** Hashing first gives equal lengths, so the comparison time says nothing about the token. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Which schemes a check accepts: the API takes the bearer token only; the docs also take basic auth. */
export interface AuthSchemes {
  /** Basic auth with any user name and the token as password: `/docs` and `/docs-json` only. */
  basic?: boolean;
}

/**
 * The admin token on every route but webhooks and health: `Authorization: Bearer <token>`. Basic
 * auth (any user, the token as password) is accepted on `/docs` and `/docs-json` only, so that a
 * browser can open the Swagger UI: a browser attaches basic credentials on its own to every
 * request to the origin, a cross-site form's included, so no other route may take them.
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

  /** Throws AUTH.ADMIN_DISABLED or AUTH.UNAUTHORIZED; also used by the request hooks (docs: `{ basic: true }`). */
  check(authorization: string | undefined, schemes: AuthSchemes = {}): void {
    if (!this.expected) throw new DomainError('AUTH.ADMIN_DISABLED', 'no ADMIN_TOKEN is configured');
    const presented = presentedToken(authorization, schemes);
    if (presented === null || !timingSafeEqual(digest(presented), this.expected)) {
      throw new DomainError('AUTH.UNAUTHORIZED', 'missing or wrong admin token');
    }
  }
}

export function presentedToken(header: string | undefined, schemes: AuthSchemes = {}): string | null {
  if (!header) return null;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return null;
  if (scheme.toLowerCase() === 'bearer') return value.trim();
  if (scheme.toLowerCase() === 'basic' && schemes.basic) {
    const decoded = Buffer.from(value.trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return null;
}
