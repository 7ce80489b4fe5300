import { INBOX_LIFECYCLE, INBOX_OUTCOMES, INBOX_STATUSES, PURGEABLE, REOPENABLE } from './inbox.state';

describe('the delivery lifecycle (inbox.state.ts)', () => {
  it('the transition table: received ends in any final status; rejected, unmatched and failed may open again', () => {
    expect(INBOX_STATUSES).toEqual(['received', 'processed', 'ignored', 'rejected', 'unmatched', 'failed']);
    expect(INBOX_LIFECYCLE.moves).toEqual({
      received: ['processed', 'ignored', 'rejected', 'unmatched', 'failed'],
      processed: [],
      ignored: [],
      rejected: ['received'],
      unmatched: ['received'],
      failed: ['received'],
    });
  });

  it('a replay opens rejected, unmatched and failed deliveries; retention purges the settled ones, never failed or received', () => {
    expect(REOPENABLE).toEqual(['rejected', 'unmatched', 'failed']);
    expect(PURGEABLE).toEqual(['processed', 'ignored', 'rejected', 'unmatched']);
  });

  it('the outcome vocabulary (docs/webhooks.md#delivery-outcomes)', () => {
    expect(INBOX_OUTCOMES).toEqual({
      processed: ['applied', 'already_applied', 'stale'],
      ignored: ['no_handler'],
      rejected: ['account_mismatch', 'amount_mismatch', 'currency_mismatch', 'illegal_transition', 'too_many_payments', 'resource_not_found'],
      unmatched: ['payment_not_found'],
    });
  });
});
