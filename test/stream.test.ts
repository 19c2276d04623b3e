import { streamCases } from './stream-cases.ts';

/** The streaming cases against the Node server. */
streamCases('node');
