import { willMergeCases } from './cli-will-merge-cases.ts';

/** Pages changed on both sides that kr push will merge, against the Node server (the same cases run under workerd too). */
willMergeCases('node');
