-- Per webhook, so that the deliverer's fairness and the pending cap cost a walk of one webhook's index entries,
-- never a scan of every delivery (lib/events/webhook-store.ts):
-- its pending deliveries by when they are due: the earliest of each webhook (whose turn it is, and when the
-- next one falls due) is one index lookup;
CREATE INDEX webhook_deliveries_hook_due ON webhook_deliveries (webhook_id, next_attempt_ms) WHERE status = 'pending';
-- its deliveries by status, newest last: the cap on its pending ones (the 1,001st newest and those older are
-- dropped) and the retention of its finished ones walk this index alone.
CREATE INDEX webhook_deliveries_hook_status ON webhook_deliveries (webhook_id, status, created_at);
