-- A statement's outcome events written to the outbox by one INSERT, not one per history row.
--
-- The outbox trigger ran once per history row: a PL/pgSQL call that read the operation's
-- row (one executor), then inserted its outbox row (a second executor, with its check
-- constraints and index entries set up again). Execute records its claims and its answers
-- a batch per statement, so a statement of 26 claims paid that setup 26 times. The
-- trigger is now an AFTER INSERT trigger for each statement, reading the statement's new
-- history rows from its transition table: one INSERT … SELECT reads each row's operation
-- by primary key and writes every outbox row the statement makes.
--
-- What is written is the same, row for row and byte for byte:
-- - the same rows: history rows whose `outcome_event_type` is not NULL, as the row
--   trigger's WHEN clause chose them;
-- - the same view: AFTER triggers, whether for each row or for the statement, run once
--   the whole statement is done, so each row trigger already read the operation as the
--   statement left it, which is what the lookup reads;
-- - the same type (`unknown` of an escalated operation reads `escalated`), the same
--   `sequence` and `approval` members, built by the same expressions;
-- - outbox ids in the order of the history rows (`ORDER BY e.id`), as the row triggers,
--   fired in the order the rows were inserted, gave them.
-- A history row whose operation does not exist cannot be inserted (foreign key
-- `operation_events_operation_fkey`), so the lookup misses nothing the STRICT read of
-- the row trigger would have refused.
--
-- One statement that inserts history rows from several parts of a query (two CTEs) fires
-- the trigger once, with all their rows in the transition table. A statement that
-- inserts no history row (a compare-and-set that moved nothing) fires it too, on an
-- empty table: the INSERT then finds nothing and writes nothing.
--
-- The numbering trigger stays for each row: it sets the row's `event_sequence` before it
-- is stored, and the table is append-only.

CREATE OR REPLACE FUNCTION operation_events_to_outbox() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    INSERT INTO operation_outbox (operation_id, event_key, sequence, event_type, tenant_id, history_id,
                                  occurred_at, data)
    SELECT (o.op).operation_id, (o.op).idempotency_key, e.event_sequence,
           CASE WHEN e.event_type = 'unknown' AND (o.op).escalated_at IS NOT NULL THEN 'escalated'
                ELSE e.event_type END,
           (o.op).tenant_id, e.id, e.at,
           operation_view(o.op) || (jsonb_build_object('sequence', e.event_sequence) || CASE
               WHEN e.event_type IN ('approval_recorded', 'approved') AND e.actor LIKE 'approver:%' THEN
                   jsonb_build_object('approval', jsonb_build_object(
                       'by', substr(e.actor, length('approver:') + 1),
                       'signed', EXISTS (SELECT FROM approvals a
                                         WHERE a.operation_id = (o.op).operation_id AND a.tenant_id = (o.op).tenant_id
                                           AND a.principal = substr(e.actor, length('approver:') + 1)
                                           AND a.payload_hash = (o.op).payload_hash AND a.signature IS NOT NULL),
                       'signed_in_with', e.signed_in_with))
               ELSE '{}'::jsonb
           END)
    -- OFFSET 0 keeps the type a column, computed once per row, rather than the call
    -- copied into each place that reads it.
    FROM (SELECT h.*, outcome_event_type(h.kind, h.to_status, h.actor, h.reason) AS event_type
          FROM new_history h OFFSET 0) e
    -- Each row's operation read by its primary key, as the row trigger read it, whatever
    -- the plan cached in the session guessed of the two tables' sizes: OFFSET 0 keeps
    -- the lookup a subquery run for each history row, never a join planned over the
    -- whole table.
    CROSS JOIN LATERAL (SELECT x AS op FROM operations x
                        WHERE x.operation_id = e.operation_id AND x.tenant_id = e.tenant_id
                        OFFSET 0) o
    WHERE e.event_type IS NOT NULL
    ORDER BY e.id;
    RETURN NULL;
END
$$;

DROP TRIGGER operation_events_outbox ON operation_events;
CREATE TRIGGER operation_events_outbox AFTER INSERT ON operation_events
    REFERENCING NEW TABLE AS new_history
    FOR EACH STATEMENT EXECUTE FUNCTION operation_events_to_outbox();
