-- Webhook ingest: what a deduplicated event said about which provider object, so that an
-- event that arrived before its operation could be linked is applied later (reconcile),
-- and what was done with each event.

ALTER TABLE webhook_events
    -- data.object.reference (the operation_id the provider echoes) and data.object.id
    -- (the provider's id, operations.external_id): the two ways to link an event.
    ADD COLUMN reference text,
    ADD COLUMN object_id text,
    -- The provider object as the event reported it (ids, status, amount, currency): the
    -- evidence an operator or a later apply needs. Never the raw body or its headers.
    ADD COLUMN object    jsonb,
    ADD CONSTRAINT webhook_events_outcome CHECK (outcome IS NULL OR outcome IN
        ('applied', 'ignored_transition', 'escalated', 'unlinked', 'ignored_type'));

-- The unlinked events of an operation, by either key; only unlinked rows are indexed.
CREATE INDEX webhook_events_unlinked_reference ON webhook_events (provider, reference)
    WHERE operation_id IS NULL;
CREATE INDEX webhook_events_unlinked_object ON webhook_events (provider, object_id)
    WHERE operation_id IS NULL;
CREATE INDEX webhook_events_by_operation ON webhook_events (operation_id)
    WHERE operation_id IS NOT NULL;
