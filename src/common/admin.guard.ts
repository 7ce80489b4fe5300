import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { PW_ADMIN_GUARD } from '../payment-webhooks.constants';

/**
 * The guard on every route but webhooks and health. It delegates to the module's admin guard:
 * the token check (AdminAuthGuard) unless the host gave its own (`adminGuard` option).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(@Inject(PW_ADMIN_GUARD) private readonly delegate: CanActivate) {}

  canActivate(context: ExecutionContext) {
    return this.delegate.canActivate(context);
  }
}
