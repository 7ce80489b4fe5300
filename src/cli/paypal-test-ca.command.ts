import { writeFileSync } from 'node:fs';
import { parseCommandArgs } from './args';
import { CliCommand, CliExit, EXIT } from './context';
import { PAYPAL_KIT_CA_PEM } from './remote/provider-options';

const USAGE = [
  'usage: payment-webhooks paypal-test-ca [--out <file>]',
  "  Prints the test kit's CA (PEM), or writes it to <file>: what a paypal endpoint under test names in its",
  '  "caFile", so that it trusts the certificate `simulate` and `conformance --provider paypal` serve and sign with,',
  '  beside "certHosts": ["127.0.0.1:<--paypal-cert-port>"]. Its keys are published: never trust it in production.',
].join('\n');

/** `payment-webhooks paypal-test-ca`: the kit's CA, for the caFile of a paypal endpoint under test. */
export const paypalTestCaCommand: CliCommand = {
  summary: "print the PayPal test kit's CA, for the caFile of a paypal endpoint under test",
  usage: USAGE,
  environment: false,
  async run(ctx) {
    const values = parseCommandArgs('paypal-test-ca', USAGE, ctx.args, { out: { type: 'string' } });
    if (values.out === undefined) {
      ctx.out(PAYPAL_KIT_CA_PEM.trimEnd());
      return EXIT.ok;
    }
    try {
      writeFileSync(values.out, PAYPAL_KIT_CA_PEM, { mode: 0o644 });
    } catch (err) {
      throw new CliExit(EXIT.couldNotRun, `paypal-test-ca: ${values.out} could not be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    ctx.out(`paypal-test-ca: the kit's CA written to ${values.out}`);
    return EXIT.ok;
  },
};
