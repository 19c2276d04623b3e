import { refusalCodeCases } from './refusal-codes-cases.ts';

/** Every kind of refusal, with its code, against the Node server (test/refusal-codes-cases.ts). */
refusalCodeCases('node');
