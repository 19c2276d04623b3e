import { watchCases } from './watch-cases.ts';

/** `kr watch` against the hosted build in workerd. */
watchCases('workers');
