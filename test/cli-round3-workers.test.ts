import { cliRound3Cases } from './cli-round3-cases.ts';

/** Issue 27's command-line client items against the hosted build in workerd (the bundle npm run dev:worker runs). */
cliRound3Cases('workers');
