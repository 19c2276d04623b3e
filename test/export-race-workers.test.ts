import { exportRaceCases } from './export-race-cases.ts';

/** An export racing the repository's deletion, against the hosted build in workerd: the Durable Object streams the bundle while its storage is emptied (test/export-race-cases.ts). */
exportRaceCases('workers');
