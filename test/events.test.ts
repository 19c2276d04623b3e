import { eventsCases } from './events-cases.ts';

/** The live events and webhook cases against the Node build (test/events-cases.ts). */
eventsCases('node');
