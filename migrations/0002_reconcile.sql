-- Reconciliation bookkeeping: how often the provider was asked about an operation and
-- when it may be asked next (backoff, and the provider's search lag).

ALTER TABLE operations
    ADD COLUMN lookup_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN next_lookup_at timestamptz;

-- The sweeper's work lists, each served by a partial index so a sweep costs the same with
-- ten rows or ten million.
DROP INDEX operations_unknown;
CREATE INDEX operations_unknown_due ON operations (next_lookup_at NULLS FIRST)
    WHERE status = 'unknown' AND escalated_at IS NULL;
CREATE INDEX operations_unknown_since ON operations (unknown_since) WHERE status = 'unknown';
CREATE INDEX operations_unstarted_expiry ON operations (approval_expires_at) WHERE status = 'not_started';

-- Operator decisions, counted by reconcile for fleet_manual_investigations_total.
CREATE INDEX operation_events_operator ON operation_events (id) WHERE actor LIKE 'operator:%';
