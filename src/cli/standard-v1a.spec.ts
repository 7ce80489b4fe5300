import { conformanceCommand } from './conformance.command';
import { CliContext, CliExit, EXIT } from './context';
import { signDelivery } from './remote/delivery';
import { runConformance } from './remote/conformance';
import { parseSimulateArgs } from './simulate.command';
import { standardProvider } from '../providers/standard.provider';
import { generateV1aKeyPair } from '../providers/standard-keys';
import { receiveWith } from '../testing/receive';

/**
 * `simulate` and `conformance` speak Standard Webhooks `v1a` (docs/webhooks.md#v1a-asymmetric-signatures):
 * `--provider standard --secret whsk_…` (the private key) signs `v1a`, a `whsec_` signs `v1`, and
 * both may sign one delivery; a `whpk_` (a public key cannot sign) or a broken `whsk_` is refused
 * before anything is sent, never echoed.
 */
jest.mock('./remote/conformance', () => ({
  ...jest.requireActual('./remote/conformance'),
  runConformance: jest.fn(async () => [{ check: 'reachable', pass: true, detail: 'ok' }]),
}));
const conformanceRun = runConformance as jest.MockedFunction<typeof runConformance>;

const PAIR = generateV1aKeyPair();
const WHSEC = `whsec_${Buffer.from('cli-v1a-hmac-key-0001').toString('base64')}`;
const SIMULATE = ['--url', 'http://127.0.0.1:3000', '--endpoint', 'std', '--provider', 'standard'];

function exitOf(fn: () => unknown): CliExit {
  try {
    fn();
  } catch (err) {
    if (err instanceof CliExit) return err;
    throw err;
  }
  throw new Error('no CliExit');
}

describe('simulate --provider standard with a whsk_', () => {
  it('takes a whsk_, alone or beside a whsec_', () => {
    expect(parseSimulateArgs([...SIMULATE, '--secret', PAIR.secretKey])).toMatchObject({ provider: 'standard', secrets: [PAIR.secretKey] });
    expect(parseSimulateArgs([...SIMULATE, '--secret', WHSEC, '--secret', PAIR.secretKey]).secrets).toEqual([WHSEC, PAIR.secretKey]);
  });

  it.each([
    ['a whpk_ (a public key cannot sign)', PAIR.publicKey],
    ['a whsk_ of 16 bytes', `whsk_${Buffer.alloc(16, 1).toString('base64')}`],
    ['a whsk_ that is not base64', 'whsk_not base64!'],
  ])('refuses %s, never echoing it', (_label, secret) => {
    const e = exitOf(() => parseSimulateArgs([...SIMULATE, '--secret', secret]));
    expect(e.code).toBe(EXIT.couldNotRun);
    expect(e.message.split('\n')[0]).toBe(
      'simulate: --secret of a standard endpoint must be whsec_ or whsk_ followed by base64 (Standard Webhooks signs with the decoded key: whsec_ v1, whsk_ v1a)',
    );
    if (secret.length > 5) expect(e.message).not.toContain(secret.slice(5));
  });

  it('signs each delivery v1a with the whsk_, which the endpoint verifies with the whpk_', async () => {
    const body = JSON.stringify({ type: 'payment.succeeded', data: { payment_id: 'pay_cli', amount: 4990, currency: 'EUR' } });
    const delivery = signDelivery('standard', 'http://127.0.0.1:3000/webhooks/std', 'msg_cli', body, { secrets: [PAIR.secretKey, WHSEC] });
    expect(delivery.headers['webhook-signature'].split(' ').map((e) => e.split(',')[0])).toEqual(['v1a', 'v1']);
    const received = (secrets: string[]) => receiveWith(standardProvider, { headers: delivery.headers, body }, { endpoint: { secrets } });
    await expect(received([PAIR.publicKey])).resolves.toMatchObject({ ok: true, secretIndex: 0, events: [{ eventId: 'msg_cli' }] });
    await expect(received([generateV1aKeyPair().publicKey, PAIR.publicKey])).resolves.toMatchObject({ ok: true, secretIndex: 1 });
    await expect(received([generateV1aKeyPair().publicKey])).resolves.toEqual({ ok: false, error: 'invalid_signature' });
  });
});

describe('conformance --provider standard with a whsk_', () => {
  function context(args: string[]): CliContext & { lines: string[] } {
    const lines: string[] = [];
    return {
      args,
      remoteEnv: { ADMIN_TOKEN: 'adm-v1a-token' },
      lines,
      get config(): never {
        throw new Error('conformance read the service environment');
      },
      out: (line) => lines.push(line),
      connect: () => Promise.reject(new Error('conformance opened the database')),
    };
  }
  const BASE = ['--url', 'http://127.0.0.1:3000', '--endpoint', 'std', '--provider', 'standard'];
  beforeEach(() => conformanceRun.mockClear());

  it('hands the whsk_ to the checks, which sign with it; nothing printed holds it', async () => {
    const ctx = context([...BASE, '--secret', PAIR.secretKey]);
    expect(await conformanceCommand.run(ctx)).toBe(EXIT.ok);
    expect(conformanceRun.mock.calls[0][0]).toMatchObject({ provider: 'standard', secrets: [PAIR.secretKey] });
    expect(ctx.lines.join('\n')).not.toContain(PAIR.secretKey.slice(5));
  });

  it('refuses a whpk_ before sending anything, never echoing it', async () => {
    const err = await conformanceCommand.run(context([...BASE, '--secret', PAIR.publicKey])).then(
      () => new Error('no CliExit'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CliExit);
    expect((err as CliExit).code).toBe(EXIT.couldNotRun);
    expect((err as CliExit).message).toBe(
      'conformance: each secret of a standard endpoint must be whsec_ or whsk_ followed by base64 (Standard Webhooks signs with the decoded key: whsec_ v1, whsk_ v1a)',
    );
    expect(conformanceRun).not.toHaveBeenCalled();
  });
});
