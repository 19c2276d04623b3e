import type { RouteDef } from '../../lib/framework/route.ts';
import billingRead from './billing/read.ts';
import billingCheckout from './billing/checkout.ts';
import billingWebhook from './billing/webhook.ts';
import adminStats from './admin/stats.ts';
import adminUsers from './admin/users.ts';
import adminRepos from './admin/repos.ts';
import adminSubscription from './admin/subscription.ts';

/**
 * The hosted build's routes (docs/api.md "Hosted build: billing", "Hosted build: admin"). Mounted only when the build is
 * hosted (functions/index.ts routesFor); the self-hosted build answers 404 on every one of them.
 */
export const hostedRoutes: RouteDef[] = [
  billingRead,
  billingCheckout,
  billingWebhook,
  adminStats,
  adminUsers,
  adminRepos,
  adminSubscription,
];
