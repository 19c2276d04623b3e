import { willMergeCases } from './cli-will-merge-cases.ts';

/** Pages changed on both sides that kr push will merge, against the hosted build in workerd. */
willMergeCases('workers');
