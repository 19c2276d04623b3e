import { refusalCodeCases } from './refusal-codes-cases.ts';

/**
 * Every kind of refusal, with its code, against the hosted build in workerd (test/refusal-codes-cases.ts):
 * those thrown inside a repository's Durable Object cross its RPC boundary with their code.
 */
refusalCodeCases('workers');
