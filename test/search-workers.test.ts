import { searchCases } from './search-cases.ts';

/** The search cases against the hosted build in workerd (each repository's index in its Durable Object's SQLite). */
searchCases('workers');
