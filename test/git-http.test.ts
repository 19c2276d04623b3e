import { gitHttpCases } from './git-http-cases.ts';

/** git's own client against the Node server's git routes. */
gitHttpCases('node');
