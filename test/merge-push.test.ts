import { mergePushCases } from './merge-push-cases.ts';

/** Section merge on push, on the Node server and on the hosted build under workerd. */
mergePushCases('node');
mergePushCases('workers');
