import { cliRound3Cases } from './cli-round3-cases.ts';

/** Issue 27's command-line client items against the Node server (the same cases run under workerd too). */
cliRound3Cases('node');
