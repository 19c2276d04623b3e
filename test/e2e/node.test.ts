import { e2eCases } from './cases.ts';

/** The shared end-to-end cases against the Node build (the server npm start runs). */
e2eCases('node');
