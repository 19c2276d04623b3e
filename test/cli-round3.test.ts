import { cliRound3Cases } from './cli-round3-cases.ts';

/** The command-line client's hardening cases (test/cli-round3-cases.ts) against the Node server (the same cases run under workerd too). */
cliRound3Cases('node');
