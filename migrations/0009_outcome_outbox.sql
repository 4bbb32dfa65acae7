-- Outcome events: every history row that matters to an agent or a person also writes an
-- outbox row, in the same transaction, by triggers on operation_events. A relay publishes
-- the rows to the `fleet.events` exchange and marks them published after the broker's
-- confirm. Which history rows become which event type is decided here, once.

-- The sequence number of the outcome event a history row produced (NULL: bookkeeping, no
-- event): 1, 2, 3, … per operation. Kept on the history, which is never deleted, because
-- published outbox rows are pruned; and numbered before the insert, so it costs no second
-- write of the operation row.
ALTER TABLE operation_events ADD COLUMN event_sequence integer;

CREATE TABLE operation_outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id text NOT NULL,
    -- 1, 2, 3, … per operation, in the order the events happened.
    sequence     integer NOT NULL CHECK (sequence > 0),
    -- The short type (`succeeded`); the published type is `fleet.operation.<event_type>`.
    event_type   text NOT NULL CHECK (event_type IN (
                     'prepared', 'approved', 'rejected', 'approval_expired', 'superseded',
                     'executing', 'accepted', 'succeeded', 'failed', 'cancelled', 'unknown',
                     'requeued', 'escalated', 'resolved', 'disputed')),
    tenant_id    text NOT NULL,
    -- The operation_events row this event reports.
    history_id   bigint NOT NULL,
    occurred_at  timestamptz NOT NULL,
    -- operation_view() of the row right after the change, plus its `sequence`.
    data         jsonb NOT NULL,
    published_at timestamptz,
    CONSTRAINT operation_outbox_sequence UNIQUE (operation_id, sequence)
);
-- The relay's work list, in commit-compatible id order; only unpublished rows are indexed.
CREATE INDEX operation_outbox_unpublished ON operation_outbox (id) WHERE published_at IS NULL;
-- Retention deletes published rows oldest first.
CREATE INDEX operation_outbox_published ON operation_outbox (published_at) WHERE published_at IS NOT NULL;

-- The event type of a history row, or NULL for bookkeeping (lookups, a webhook noted on a
-- disputed row, anything new). A transition to unknown that also escalated the row is
-- reported as `escalated` by the trigger, which sees the row.
CREATE FUNCTION outcome_event_type(kind text, to_status text, actor text, reason text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN kind = 'prepared' THEN 'prepared'
        WHEN kind = 'approved' THEN 'approved'
        WHEN kind = 'approval_expired' THEN 'approval_expired'
        WHEN kind = 'escalated' THEN 'escalated'
        -- A webhook that contradicts the row escalates it; on a disputed row, or on a row
        -- already escalated to a person, it is only noted.
        WHEN kind = 'webhook_conflict' THEN
            CASE WHEN reason NOT IN ('webhook_on_disputed', 'operation_escalated') OR reason IS NULL THEN 'escalated' END
        WHEN kind <> 'transition' THEN NULL
        WHEN actor LIKE 'operator:%' THEN
            CASE WHEN to_status = 'disputed' THEN 'disputed' ELSE 'resolved' END
        WHEN to_status = 'in_progress' THEN 'executing'
        WHEN to_status = 'not_started' THEN 'requeued'
        WHEN to_status = 'accepted' THEN 'accepted'
        WHEN to_status = 'unknown' THEN 'unknown'
        WHEN to_status = 'succeeded' THEN 'succeeded'
        WHEN to_status = 'failed' THEN 'failed'
        WHEN to_status = 'disputed' THEN 'disputed'
        WHEN to_status = 'cancelled' THEN
            CASE reason
                WHEN 'approval_rejected' THEN 'rejected'
                WHEN 'approval_expired' THEN 'approval_expired'
                WHEN 'superseded' THEN 'superseded'
                ELSE 'cancelled'
            END
    END
$$;

-- Numbers a history row that produces an event. Every writer of history already holds the
-- operation's row lock until it commits; taking it here as well makes that true for any
-- writer, so two transactions never draw the same number and numbers commit in order.
CREATE FUNCTION operation_events_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM operations WHERE operation_id = NEW.operation_id FOR NO KEY UPDATE;
    NEW.event_sequence := 1 + COALESCE(
        (SELECT max(e.event_sequence) FROM operation_events e WHERE e.operation_id = NEW.operation_id), 0);
    RETURN NEW;
END $$;

-- Runs at the end of the statement that wrote the history row, so the operation row it
-- reads is the one that statement left (a CTE's UPDATE included). One read by primary key
-- and one INSERT, inside the writer's own transaction: no extra round trip.
CREATE FUNCTION operation_events_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    event_type text := outcome_event_type(NEW.kind, NEW.to_status, NEW.actor, NEW.reason);
    op operations;
BEGIN
    SELECT * INTO STRICT op FROM operations WHERE operation_id = NEW.operation_id;
    IF event_type = 'unknown' AND op.escalated_at IS NOT NULL THEN
        event_type := 'escalated';
    END IF;
    INSERT INTO operation_outbox (operation_id, sequence, event_type, tenant_id, history_id, occurred_at, data)
    VALUES (op.operation_id, NEW.event_sequence, event_type, op.tenant_id, NEW.id, NEW.at,
            operation_view(op) || jsonb_build_object('sequence', NEW.event_sequence));
    -- One wake-up per transaction (identical notifications are folded at commit); the
    -- relay also polls, so a lost notification only delays.
    PERFORM pg_notify('fleet_outbox', '');
    RETURN NULL;
END $$;

-- WHEN keeps bookkeeping rows from calling either function at all.
CREATE TRIGGER operation_events_number
    BEFORE INSERT ON operation_events
    FOR EACH ROW
    WHEN (outcome_event_type(NEW.kind, NEW.to_status, NEW.actor, NEW.reason) IS NOT NULL)
    EXECUTE FUNCTION operation_events_number();
CREATE TRIGGER operation_events_outbox
    AFTER INSERT ON operation_events
    FOR EACH ROW
    WHEN (outcome_event_type(NEW.kind, NEW.to_status, NEW.actor, NEW.reason) IS NOT NULL)
    EXECUTE FUNCTION operation_events_to_outbox();
