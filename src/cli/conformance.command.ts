import { CliCommand, EXIT } from './context';

const USAGE = 'usage: payment-webhooks conformance --url <base URL> --endpoint <id> --provider <p> --secret <s> (not yet built)';

export const conformanceCommand: CliCommand = {
  summary: 'the re-delivery checks to pass before going live, against a running service',
  usage: USAGE,
  environment: false,
  async run() {
    return EXIT.couldNotRun;
  },
};
