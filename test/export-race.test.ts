import { exportRaceCases } from './export-race-cases.ts';

/** An export racing the repository's deletion, against the Node server (test/export-race-cases.ts). */
exportRaceCases('node');
