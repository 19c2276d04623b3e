import { lifecycleCases } from './lifecycle-cases.ts';

/** Links, role changes and repository deletion over HTTP against the Node server (test/lifecycle-cases.ts). */
lifecycleCases('node');
