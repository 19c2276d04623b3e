import { streamCases } from './stream-cases.ts';

/** The streaming cases against the hosted build in workerd: the repository's Durable Object streams pulls and exports to the Worker. */
streamCases('workers');
