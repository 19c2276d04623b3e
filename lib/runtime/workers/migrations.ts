/**
 * The numbered migrations of schema/migrations, compiled into the hosted build (which has no filesystem to
 * read them from): esbuild and wrangler load `.sql` files as text. The Node build reads the directory
 * (lib/runtime/node/open-db.ts); test/workers-build.test.ts checks this list names every file there.
 */
import { migrationsFromFiles } from '../../db/migrate.ts';
import m0001 from '../../../schema/migrations/0001_init.sql';
import m0002 from '../../../schema/migrations/0002_head_path_fold.sql';
import m0003 from '../../../schema/migrations/0003_removals_issuers.sql';
import m0004 from '../../../schema/migrations/0004_billing.sql';
import m0005 from '../../../schema/migrations/0005_repo_registry.sql';
import m0006 from '../../../schema/migrations/0006_user_disabled.sql';
import m0007 from '../../../schema/migrations/0007_search.sql';
import m0008 from '../../../schema/migrations/0008_activity_commit.sql';
import m0009 from '../../../schema/migrations/0009_pat_parent.sql';
import m0011 from '../../../schema/migrations/0011_events.sql';
import m0012 from '../../../schema/migrations/0012_links.sql';
import m0013 from '../../../schema/migrations/0013_event_seq.sql';
import m0015 from '../../../schema/migrations/0015_webhook_pending.sql';
import m0016 from '../../../schema/migrations/0016_activity_import.sql';
import m0017 from '../../../schema/migrations/0017_activity_member.sql';

export const BUNDLED_MIGRATION_FILES = [
  { name: '0001_init.sql', sql: m0001 },
  { name: '0002_head_path_fold.sql', sql: m0002 },
  { name: '0003_removals_issuers.sql', sql: m0003 },
  { name: '0004_billing.sql', sql: m0004 },
  { name: '0005_repo_registry.sql', sql: m0005 },
  { name: '0006_user_disabled.sql', sql: m0006 },
  { name: '0007_search.sql', sql: m0007 },
  { name: '0008_activity_commit.sql', sql: m0008 },
  { name: '0009_pat_parent.sql', sql: m0009 },
  { name: '0011_events.sql', sql: m0011 },
  { name: '0012_links.sql', sql: m0012 },
  { name: '0013_event_seq.sql', sql: m0013 },
  { name: '0015_webhook_pending.sql', sql: m0015 },
  { name: '0016_activity_import.sql', sql: m0016 },
  { name: '0017_activity_member.sql', sql: m0017 },
];

export const BUNDLED_MIGRATIONS = migrationsFromFiles(BUNDLED_MIGRATION_FILES);
