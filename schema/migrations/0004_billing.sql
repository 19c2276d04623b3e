-- Hosted build: subscriptions and the billing webhook's replay guard (lib/db/billing.ts). The tables exist
-- in every build; only the hosted one writes them.

-- One row per user whose plan was ever set. active = 1: subscribed ("pro"); 0 or no row: the free plan.
-- event_t is the signed time (Unix seconds) of the webhook event, or the server time of the admin action,
-- that set the row: an event older than it is not applied (webhooks may arrive out of order).
CREATE TABLE subscriptions (
  user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  active     INTEGER NOT NULL CHECK (active IN (0, 1)),
  event_t    INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Webhook signatures already applied (the v1 HMAC, lowercase hex), so a replay has no effect. A signature
-- is only accepted within 300 s of its own time, so rows older than 600 s are pruned.
CREATE TABLE billing_webhook_seen (
  signature TEXT PRIMARY KEY,
  seen_at   INTEGER NOT NULL
);
CREATE INDEX billing_webhook_seen_at ON billing_webhook_seen (seen_at);
