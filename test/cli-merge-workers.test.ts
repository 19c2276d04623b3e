import { cliMergeCases } from './cli-merge-cases.ts';

/** Issue 30's `kr push` items (section merge) against the hosted build in workerd (the bundle npm run dev:worker runs). */
cliMergeCases('workers');
