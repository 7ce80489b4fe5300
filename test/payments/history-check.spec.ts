import { CurrentStates, HistoryItem, historyProblems } from '../support/history-check';

/**
 * The check the chaos suites run on every order's history (test/support/history-check.ts): a sound
 * history passes, and each way a history can be wrong is named.
 */
describe('historyProblems', () => {
  const ORDER = '01900000-0000-7000-8000-000000000001';
  const PAYMENT = '01900000-0000-7000-8000-000000000002';
  const FULFILLMENT = '01900000-0000-7000-8000-000000000003';
  const REFUND = '01900000-0000-7000-8000-000000000004';
  const paidDelivery = { kind: 'delivery', deliveryId: 'd-1', eventId: 'evt_1', provider: 'stripe' };
  const refundDelivery = { kind: 'delivery', deliveryId: 'd-2', eventId: 'evt_2', provider: 'stripe' };
  let second = 0;
  const item = (entity: HistoryItem['entity'], entityId: string, from: string | null, to: string, cause: Record<string, unknown>): HistoryItem => ({
    at: new Date(Date.UTC(2026, 11, 7, 20, 0, second++)).toISOString(),
    entity,
    entityId,
    from,
    to,
    cause,
  });

  function sound(): { items: HistoryItem[]; current: CurrentStates } {
    second = 0;
    const items = [
      item('order', ORDER, null, 'awaiting_payment', { kind: 'api', action: 'place' }),
      item('payment', PAYMENT, null, 'pending', paidDelivery),
      item('payment', PAYMENT, 'pending', 'succeeded', paidDelivery),
      item('order', ORDER, 'awaiting_payment', 'paid', paidDelivery),
      item('fulfillment', FULFILLMENT, null, 'requested', paidDelivery),
      item('fulfillment', FULFILLMENT, 'requested', 'dispatched', { kind: 'carrier', shipmentId: 'shp_1' }),
      item('order', ORDER, 'paid', 'fulfilled', { kind: 'carrier', shipmentId: 'shp_1' }),
      item('refund', REFUND, null, 'requested', { kind: 'api', action: 'refund' }),
      item('refund', REFUND, 'requested', 'submitted', { kind: 'provider-api', commandId: REFUND }),
      item('refund', REFUND, 'submitted', 'succeeded', refundDelivery),
      item('payment', PAYMENT, 'succeeded', 'refunded', refundDelivery),
      item('order', ORDER, 'fulfilled', 'refunded', refundDelivery),
    ];
    const current: CurrentStates = {
      order: { id: ORDER, status: 'refunded' },
      payments: [{ id: PAYMENT, status: 'refunded' }],
      fulfillment: { id: FULFILLMENT, status: 'dispatched' },
      refunds: [{ id: REFUND, status: 'succeeded' }],
    };
    return { items, current };
  }

  it('a sound history: no problem', () => {
    const { items, current } = sound();
    expect(historyProblems(items, current)).toEqual([]);
  });

  it('a refund retried by an operator moves back and forth: still sound', () => {
    const { items, current } = sound();
    const retried = [
      ...items.slice(0, 8),
      item('refund', REFUND, 'requested', 'failed', { kind: 'provider-api', commandId: REFUND }),
      item('refund', REFUND, 'failed', 'requested', { kind: 'api', action: 'retry' }),
      ...items.slice(8).map((i) => ({ ...i, at: new Date(Date.parse(i.at) + 10_000).toISOString() })),
    ];
    expect(historyProblems(retried, current)).toEqual([]);
  });

  it('partial refunds one after another: the payment\'s moves from partially_refunded to itself, each by its own delivery', () => {
    const { items, current } = sound();
    const partial = (n: number) => ({ kind: 'delivery', deliveryId: `d-p${n}`, eventId: `evt_p${n}`, provider: 'stripe' });
    const refunds = [
      ...items.slice(0, 7),
      item('payment', PAYMENT, 'succeeded', 'partially_refunded', partial(1)),
      item('payment', PAYMENT, 'partially_refunded', 'partially_refunded', partial(2)),
      item('payment', PAYMENT, 'partially_refunded', 'partially_refunded', partial(3)),
    ];
    const now = { ...current, order: { id: ORDER, status: 'fulfilled' }, payments: [{ id: PAYMENT, status: 'partially_refunded' }], refunds: [] };
    expect(historyProblems(refunds, now)).toEqual([]);
    // The same delivery's amount move twice is a duplicate.
    const twice = [...refunds.slice(0, 9), { ...refunds[8], at: refunds[9].at }];
    expect(historyProblems(twice, now)).toEqual([
      `payment ${PAYMENT}: moves 3 and 4 are both partially_refunded→partially_refunded`,
      `payment ${PAYMENT}: delivery d-p2 made partially_refunded→partially_refunded twice`,
    ]);
  });

  it('a move listed twice (a duplicate delivery applied again)', () => {
    const { items, current } = sound();
    const twice = [...items.slice(0, 10), { ...items[9] }, ...items.slice(10)];
    expect(historyProblems(twice, current)).toEqual([
      `refund ${REFUND}: moves 2 and 3 are both submitted→succeeded`,
      `refund ${REFUND}: move 3 (submitted→succeeded) does not start where move 2 (submitted→succeeded) ended`,
      `refund ${REFUND}: delivery d-2 made submitted→succeeded twice`,
    ]);
  });

  it('a gap in a chain, a move to itself, a missing creation', () => {
    const { items, current } = sound();
    const gap = items.filter((_, i) => i !== 8);
    expect(historyProblems(gap, current)).toEqual([`refund ${REFUND}: move 1 (submitted→succeeded) does not start where move 0 (∅→requested) ended`]);
    // Only a payment's amounts move without its status; a fulfillment's or an order's never does.
    const self = [...items.slice(0, 5), item('fulfillment', FULFILLMENT, 'requested', 'requested', paidDelivery), ...items.slice(5)].map((i, n) => ({ ...i, at: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString() }));
    expect(historyProblems(self, current)).toEqual([`fulfillment ${FULFILLMENT}: move 1 goes from requested to itself`]);
    const uncreated = items.filter((_, i) => i !== 7);
    expect(historyProblems(uncreated, current)).toEqual([`refund ${REFUND}: its first move is requested→submitted, not its creation`]);
  });

  it('a last move that is not the status now; an entity without history; one the order does not hold', () => {
    const { items, current } = sound();
    expect(historyProblems(items, { ...current, order: { id: ORDER, status: 'fulfilled' } })).toEqual([`order ${ORDER}: the history ends at refunded, but it is fulfilled`]);
    const other = '01900000-0000-7000-8000-0000000000ff';
    expect(historyProblems(items, { ...current, refunds: [...current.refunds, { id: other, status: 'requested' }] })).toEqual([
      `refund ${other}: requested, but the history has no move of it`,
    ]);
    expect(historyProblems(items, { ...current, refunds: [] })).toEqual([`refund ${REFUND}: in the history, but the order holds no such refund`]);
  });

  it('items out of time order', () => {
    const { items, current } = sound();
    const swapped = [...items];
    [swapped[1], swapped[2]] = [{ ...swapped[1], at: swapped[2].at }, { ...swapped[2], at: swapped[1].at }];
    expect(historyProblems(swapped, current)).toEqual([`item 2 (pending→succeeded) at ${items[1].at} comes after one at ${items[2].at}`]);
  });
});
