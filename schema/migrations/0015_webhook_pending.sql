-- A webhook's deliveries by status, newest last: the cap on its pending deliveries (the 1,001st newest pending
-- one and those older are dropped) and the retention of its finished ones walk this index alone, instead of
-- every delivery of the webhook with a row lookup each (lib/events/webhook-store.ts, pendingCapStmts).
CREATE INDEX webhook_deliveries_hook_status ON webhook_deliveries (webhook_id, status, created_at);
