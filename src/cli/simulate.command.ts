import { CliCommand, EXIT } from './context';

const USAGE = 'usage: payment-webhooks simulate --url <base URL> --endpoint <id> --provider <p> --secret <s> (not yet built)';

export const simulateCommand: CliCommand = {
  summary: 'send signed events as the provider would, retrying on its schedule',
  usage: USAGE,
  environment: false,
  async run() {
    return EXIT.couldNotRun;
  },
};
