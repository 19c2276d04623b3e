import { cliMergeCases } from './cli-merge-cases.ts';

/** Section merge in `kr push` against the hosted build in workerd (the bundle npm run dev:worker runs). */
cliMergeCases('workers');
