import { cliMergeCases } from './cli-merge-cases.ts';

/** Section merge in `kr push` against the Node server (the same cases run under workerd too). */
cliMergeCases('node');
