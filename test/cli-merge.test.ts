import { cliMergeCases } from './cli-merge-cases.ts';

/** Issue 30's `kr push` items (section merge) against the Node server (the same cases run under workerd too). */
cliMergeCases('node');
