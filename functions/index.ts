import type { RouteDef } from '../lib/route.ts';
import health from './health.ts';

/** Every endpoint of the service, in one list: lib/app.ts mounts exactly these. */
export const routes: RouteDef[] = [health];
