-- An approver's notice written by the statement that writes its `prepared` event, not by
-- a row trigger on the outbox.
--
-- 0077 and 0088 wrote the notice from an AFTER INSERT row trigger on `operation_outbox`:
-- for every `prepared` event a PL/pgSQL call with its own search path, one query for the
-- tenant's channels and one INSERT, each with an executor of its own. No component may
-- insert outbox rows; the database's own triggers write them, and `prepared` events come
-- only from the history table's (`operation_events_to_outbox`, SECURITY DEFINER), one
-- INSERT for each statement that writes history (0095; the mandates' trigger writes only
-- `mandate_*` events). That INSERT now also writes the notices, as a second part of the
-- same statement: prepare's batch of intents writes all its events and all its notices
-- with one statement.
--
-- What is written is the same:
-- - a notice for each `prepared` event of a tenant on the list of tenants with a channel
--   (`approval_notice_tenants`) whose operation still waits for approval (`pending`);
-- - with the event's id, its view (`data`) as stored, and the operation's approval
--   deadline, read in the same statement, as the row trigger read them;
-- - in the order of the events' ids; a notice already written for an event is left as
--   it is (ON CONFLICT (outbox_id) DO NOTHING).
-- The events themselves are written exactly as 0095 wrote them.

CREATE OR REPLACE FUNCTION operation_events_to_outbox() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    WITH written AS (
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
        -- Each row's operation read by its primary key, whatever the plan cached in the
        -- session guessed of the two tables' sizes: OFFSET 0 keeps the lookup a subquery
        -- run for each history row, never a join planned over the whole table.
        CROSS JOIN LATERAL (SELECT x AS op FROM operations x
                            WHERE x.operation_id = e.operation_id AND x.tenant_id = e.tenant_id
                            OFFSET 0) o
        WHERE e.event_type IS NOT NULL
        ORDER BY e.id
        RETURNING id, tenant_id, operation_id, event_type, data
    )
    INSERT INTO approval_notices (tenant_id, operation_id, outbox_id, view, approval_expires_at)
    SELECT w.tenant_id, w.operation_id, w.id, w.data, p.approval_expires_at
    FROM written w
    CROSS JOIN LATERAL (SELECT x.approval_expires_at FROM operations x
                        WHERE x.tenant_id = w.tenant_id AND x.operation_id = w.operation_id
                          AND x.approval_status = 'pending'
                        OFFSET 0) p
    WHERE w.event_type = 'prepared'
      AND EXISTS (SELECT FROM approval_notice_tenants t WHERE t.tenant_id = w.tenant_id)
    ORDER BY w.id
    ON CONFLICT (outbox_id) DO NOTHING;
    RETURN NULL;
END
$$;

DROP TRIGGER operation_outbox_approval_wait ON operation_outbox;
DROP FUNCTION fleet_note_approval_wait();
