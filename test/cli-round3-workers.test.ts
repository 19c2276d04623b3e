import { cliRound3Cases } from './cli-round3-cases.ts';

/** The command-line client's hardening cases (test/cli-round3-cases.ts) against the hosted build in workerd (the bundle npm run dev:worker runs). */
cliRound3Cases('workers');
