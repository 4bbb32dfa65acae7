-- Each history row's outbox row, for fewer instructions: the same rows, the same JSON, the
-- same rule on event types.
--
-- Every outcome event inserts one `operation_outbox` row from inside the history trigger,
-- and every such INSERT (like the relay's UPDATE of `published_at`) runs in an executor of
-- its own. Postgres reads a table's CHECK constraints back from their stored node text
-- once per executor, not once per connection: `operation_outbox_event_type_check`, an
-- IN list of 21 literals, was deserialised (each literal's bytes parsed one number at a
-- time) and planned again for every event, about a tenth of the instructions of the whole
-- history row's trigger chain. The constraint now calls a PL/pgSQL function holding the
-- same list: its stored expression is one function call, and the function is compiled
-- once per connection. The constraint keeps its name (so a violation reads as before:
-- SQLSTATE 23514, `operation_outbox_event_type_check`) and holds for every row and every
-- role as before; re-adding it validates the rows already there. The function answers
-- NULL for NULL, as the IN list did (the column is NOT NULL). It pins its search_path, as
-- a check must not resolve `=` through a schema a caller put first.
--
-- `operation_view` wrote its seven timestamps through `fleet_utc`, one PL/pgSQL call each
-- per event; it now writes `fleet_utc`'s expression itself (the same `to_char` of the
-- same UTC time with the same format), so every string is the same. `fleet_utc` stays
-- for its other callers. Everything else in the view is as 0069 wrote it, key for key;
-- it stays PL/pgSQL, STABLE, without a SET clause, as before (0030 says why not SQL).
--
-- Whoever adds an event type replaces `fleet_outbox_event_type_known` (widening the list
-- needs no check of the rows); whoever narrows it re-adds the constraint, so that the
-- rows already written are checked again.

CREATE FUNCTION fleet_outbox_event_type_known(t text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN t = ANY (ARRAY['prepared', 'approval_recorded', 'approved', 'approval_voided', 'rejected',
                          'approval_expired', 'superseded', 'executing', 'accepted', 'succeeded', 'failed',
                          'cancelled', 'unknown', 'requeued', 'escalated', 'resolved', 'disputed',
                          'mandate_created', 'mandate_used', 'mandate_exhausted', 'mandate_revoked']);
END $$;

ALTER TABLE operation_outbox
    DROP CONSTRAINT operation_outbox_event_type_check,
    ADD CONSTRAINT operation_outbox_event_type_check CHECK (fleet_outbox_event_type_known(event_type));

-- As 0069's, with `fleet_utc`'s expression written in place of its seven calls.
CREATE OR REPLACE FUNCTION operation_view(o operations) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
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
        'confirmation', CASE WHEN o.status = 'succeeded' THEN fleet_confirmation(o.operation_id, o.tenant_id) END,
        'escalated', o.escalated_at IS NOT NULL,
        'approval_status', o.approval_status,
        'approval_expires_at', to_char(o.approval_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'approvals_required', o.approvals_required,
        'approvals_received', (fleet_quorum_count(o.operation_id, o.tenant_id)).counted,
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
