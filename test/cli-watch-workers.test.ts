import { watchCases } from './watch-cases.ts';

/** `kr watch` (issue 31) against the hosted build in workerd. */
watchCases('workers');
