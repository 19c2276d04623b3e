import { importCases } from './import-cases.ts';

/** Imports of git bundles over HTTP against the Node server (test/import-cases.ts): git's own packs kept on disk. */
importCases('node');
