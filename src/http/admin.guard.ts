import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { isObservable, lastValueFrom } from 'rxjs';
import { isJsonContentType } from './platform';
import { PW_ADMIN_GUARD } from '../config/tokens';
import { DomainError } from '../common/domain-error';

/** The methods that change state: their body, when they carry one, must be JSON. */
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The guard on every route but webhooks and health. It delegates to the module's admin guard:
 * the token check (AdminAuthGuard) unless the host gave its own (`adminGuard` option). Once the
 * caller is let in (auth first: an unauthenticated caller learns nothing of its input), a
 * state-changing request that declares a body other than JSON answers 415 unsupported_media_type:
 * a cross-site form can only send urlencoded, multipart or text/plain bodies, so no form reaches
 * a route that acts, whatever the host's body parsers accept.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(@Inject(PW_ADMIN_GUARD) private readonly delegate: CanActivate) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const verdict = this.delegate.canActivate(context);
    const allowed = isObservable(verdict) ? await lastValueFrom(verdict) : await verdict;
    if (!allowed) return false;
    const req = context.switchToHttp().getRequest<{ method?: string; headers: Record<string, string | string[] | undefined> }>();
    if (STATE_CHANGING.has(String(req.method).toUpperCase())) {
      const type = req.headers['content-type'];
      if (type !== undefined && !isJsonContentType(Array.isArray(type) ? type[0] : type)) {
        throw new DomainError('REQUEST.UNSUPPORTED_MEDIA_TYPE', 'the body must be JSON (Content-Type: application/json)');
      }
    }
    return true;
  }
}
