import { eventsCases } from './events-cases.ts';

/** The live events and webhook cases against the hosted build in workerd (Miniflare): the repository's Durable Object holds them. */
eventsCases('workers');
