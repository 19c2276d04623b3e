import { gitHttpCases } from './git-http-cases.ts';

/** git's own client against the hosted build in workerd: the repository's Durable Object negotiates and streams the pack. */
gitHttpCases('workers');
