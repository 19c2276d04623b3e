import { lifecycleCases } from './lifecycle-cases.ts';

/**
 * Links, role changes and repository deletion against the hosted build in workerd (test/lifecycle-cases.ts):
 * the link rows in each repository's Durable Object, a deletion that empties the object and leaves its
 * tombstone, the accounts in D1.
 */
lifecycleCases('workers');
