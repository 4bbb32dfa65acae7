-- The statement that writes a statement's outcome events also writes the approvers'
-- notices and reads what each event's view needs: fewer calls, the same rows.
--
-- An approver's notice is written by the statement that writes its `prepared` event, not
-- by a row trigger on the outbox.
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
-- The events themselves are the rows 0095 wrote, value for value (see below for the view).
--
-- The view in each event is built in the same statement too. `operation_view` counted the
-- approvals and read a succeeded operation's confirmation through `fleet_quorum_count` and
-- `fleet_confirmation`, SECURITY DEFINER functions with a search path of their own: for
-- every event two more PL/pgSQL calls, each saving and restoring the settings and running
-- its query in an executor of its own. Their queries are now SQL functions that Postgres
-- writes into the query that calls them (`fleet_approvals_counted`,
-- `fleet_confirmation_of`: one row each, not SECURITY DEFINER, no SET clause, so inlined
-- and planned once with the caller's cached plan):
-- - `fleet_quorum_count` and `fleet_confirmation` answer from them, so the quorum rule
--   and the confirmation are still written once;
-- - the view's keys are built by `operation_view_of(o, approvals_received,
--   confirmation)`, and `operation_view(o)` is that with the two read as before, so every
--   reader of the view gets the same JSON, key for key and value for value;
-- - the outbox statement reads the count and the confirmation as subqueries of its own,
--   per event, by the operation's key (a confirmation only for a succeeded operation, as
--   the view asked for it), and passes them to `operation_view_of`.
-- The tables in the two SQL functions are named with their schema: an inlined body is
-- read under its caller's search path. Only the owner's functions may call them.

CREATE FUNCTION fleet_approvals_counted(op text, tenant text)
RETURNS TABLE (counted bigint, signed_any bigint) LANGUAGE sql STABLE AS $$
    -- The approvals that count: of the stored hash, not void, not the submitter's, each by
    -- a live approver of the tenant granted it no later than the approval; and how many
    -- of those carry a signature at all.
    SELECT count(*), count(*) FILTER (WHERE a.signature IS NOT NULL)
    FROM public.operations o
    JOIN public.approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
    JOIN public.principals pr ON pr.name = a.principal
    JOIN public.principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
    WHERE o.operation_id = op AND o.tenant_id = tenant
      AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
      AND a.principal IS DISTINCT FROM o.submitted_by
      AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at
$$;
REVOKE ALL ON FUNCTION fleet_approvals_counted(text, text) FROM PUBLIC;

CREATE FUNCTION fleet_confirmation_of(op text, tenant text)
RETURNS TABLE (confirmed jsonb) LANGUAGE sql STABLE AS $$
    -- The confirmation of the move that made the operation succeeded.
    SELECT (SELECT e.evidence -> 'confirmed' FROM public.operation_events e
            WHERE e.operation_id = op AND e.tenant_id = tenant AND e.kind = 'transition'
              AND e.to_status = 'succeeded'
            ORDER BY e.id DESC LIMIT 1)
$$;
REVOKE ALL ON FUNCTION fleet_confirmation_of(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION fleet_quorum_count(op text, tenant text, OUT counted bigint, OUT signed bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    -- `signed` holds, for now, how many counted approvals carry a signature at all.
    SELECT c.counted, c.signed_any INTO counted, signed FROM fleet_approvals_counted(op, tenant) c;
    IF signed > 0 THEN
        -- Of those, the ones signed with a key of their approver's registered before the
        -- approval and not removed.
        SELECT count(*) INTO signed
        FROM operations o
        JOIN approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
        JOIN principals pr ON pr.name = a.principal
        JOIN principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
        JOIN approver_keys k ON k.key_id = a.key_id
        WHERE o.operation_id = op AND o.tenant_id = tenant
          AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
          AND a.principal IS DISTINCT FROM o.submitted_by
          AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at
          AND a.signature IS NOT NULL
          AND k.principal = a.principal AND k.registered_at < a.at AND k.removed_at IS NULL;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION fleet_confirmation(op text, tenant text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN (SELECT f.confirmed FROM fleet_confirmation_of(op, tenant) f);
END $$;

-- The view's keys, as 0090 wrote them, with the approvals counted and the confirmation
-- given; the confirmation is shown only for a succeeded operation.
CREATE FUNCTION operation_view_of(o operations, approvals_received bigint, confirmation jsonb)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN jsonb_build_object(
        'operation_id', o.operation_id,
        'tenant_id', o.tenant_id,
        'action', o.action,
        'provider', o.provider,
        'target', o.target,
        'supersedes', o.supersedes,
        'payload', o.payload,
        'payload_hash', o.payload_hash,
        'policy_version', o.policy_version,
        'data_version', o.data_version,
        'payee', o.payee,
        'risk', o.risk,
        'status', o.status,
        'reason', o.status_reason,
        'error_code', o.error_code,
        'external_id', o.external_id,
        'confirmation', CASE WHEN o.status = 'succeeded' THEN confirmation END,
        'escalated', o.escalated_at IS NOT NULL,
        'approval_status', o.approval_status,
        'approval_expires_at', to_char(o.approval_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'approvals_required', o.approvals_required,
        'approvals_received', approvals_received,
        'decided_by', o.decided_by,
        'decided_at', to_char(o.decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'submitted_by', o.submitted_by,
        'created_at', to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'updated_at', to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'unknown_since', to_char(o.unknown_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'escalated_at', to_char(o.escalated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'resolved_at', to_char(o.resolved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    );
END $$;

CREATE OR REPLACE FUNCTION operation_view(o operations) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN operation_view_of(o, (fleet_quorum_count(o.operation_id, o.tenant_id)).counted,
                             CASE WHEN o.status = 'succeeded' THEN fleet_confirmation(o.operation_id, o.tenant_id) END);
END $$;

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
               operation_view_of(o.op,
                             (SELECT c.counted FROM fleet_approvals_counted((o.op).operation_id, (o.op).tenant_id) c),
                             CASE WHEN (o.op).status = 'succeeded' THEN
                                 (SELECT f.confirmed FROM fleet_confirmation_of((o.op).operation_id, (o.op).tenant_id) f)
                             END)
               || (jsonb_build_object('sequence', e.event_sequence) || CASE
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
