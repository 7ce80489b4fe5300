import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { CliContext, CliExit, EXIT } from './context';
import { paypalTestCaCommand } from './paypal-test-ca.command';
import { PAYPAL_TEST_CA_PEM, PAYPAL_TEST_SIGNING_CERT_PEM } from '../testing/paypal';

function context(args: string[]): CliContext & { lines: string[] } {
  const lines: string[] = [];
  return {
    args,
    remoteEnv: {},
    lines,
    get config(): never {
      throw new Error('paypal-test-ca read the service environment');
    },
    out: (line) => lines.push(line),
    connect: () => Promise.reject(new Error('paypal-test-ca opened the database')),
  };
}

/** `payment-webhooks paypal-test-ca`: the kit's CA, the one that issued the certificate the kit signs with. */
describe('payment-webhooks paypal-test-ca', () => {
  it('prints the kit\'s CA, which issued the kit\'s signing certificate', async () => {
    const ctx = context([]);
    expect(await paypalTestCaCommand.run(ctx)).toBe(EXIT.ok);
    expect(`${ctx.lines.join('\n')}\n`).toBe(PAYPAL_TEST_CA_PEM);
    expect(new X509Certificate(PAYPAL_TEST_SIGNING_CERT_PEM).checkIssued(new X509Certificate(ctx.lines.join('\n')))).toBe(true);
  });

  it('--out <file>: writes it there (readable by the service), one line saying where', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'pw-paypal-ca-')), 'kit-ca.pem');
    const ctx = context(['--out', file]);
    expect(await paypalTestCaCommand.run(ctx)).toBe(EXIT.ok);
    expect(readFileSync(file, 'utf8')).toBe(PAYPAL_TEST_CA_PEM);
    expect(statSync(file).mode & 0o400).toBe(0o400);
    expect(ctx.lines).toEqual([`paypal-test-ca: the kit's CA written to ${file}`]);
  });

  it('a file that cannot be written: exit 2 naming it', async () => {
    const err = await paypalTestCaCommand.run(context(['--out', '/nonexistent-dir/kit-ca.pem'])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliExit);
    expect([(err as CliExit).code, (err as CliExit).message]).toEqual([EXIT.couldNotRun, 'paypal-test-ca: /nonexistent-dir/kit-ca.pem could not be written (ENOENT)']);
  });
});
