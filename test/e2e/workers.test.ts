import { e2eCases } from './cases.ts';

/** The shared end-to-end cases against the hosted build in workerd (the bundle npm run dev:worker runs). */
e2eCases('workers');
