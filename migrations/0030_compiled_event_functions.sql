-- The outcome-event path, compiled once per connection instead of once per statement.
--
-- `outcome_event_type`, `operation_view` and `fleet_utc` were SQL-language functions.
-- Postgres keeps no plan of such a function between queries: `operation_view` (not
-- inlinable: it holds a subquery) was parsed and planned again for every history row the
-- outbox trigger turned into an event, and with it its eight calls of `fleet_utc` (not
-- inlinable either: `to_char` of a timestamp is only stable, the function says
-- immutable); `outcome_event_type` was parsed again (to be inlined) by both triggers'
-- WHEN clauses on every statement that wrote history. Together that was the largest part
-- of Postgres's CPU per operation on the hot path (prepare, approve, claim, record). The
-- same functions in PL/pgSQL are compiled once per connection and their plans cached.
-- What they return is unchanged, value for value: the same format, the same CASE, the
-- same jsonb_build_object with the same keys in the same order.
--
-- Whoever changes one of these functions again redefines it in PL/pgSQL (a later SQL
-- version would bring the per-statement cost back).

CREATE OR REPLACE FUNCTION fleet_utc(t timestamptz) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
END $$;

CREATE OR REPLACE FUNCTION outcome_event_type(kind text, to_status text, actor text, reason text)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN CASE
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
    END;
END $$;

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
        'status', o.status,
        'reason', o.status_reason,
        'error_code', o.error_code,
        'external_id', o.external_id,
        'escalated', o.escalated_at IS NOT NULL,
        'approval_status', o.approval_status,
        'approval_expires_at', fleet_utc(o.approval_expires_at),
        'approvals_required', o.approvals_required,
        'approvals_received', (SELECT count(*) FROM approvals a
                               WHERE a.operation_id = o.operation_id AND a.payload_hash = o.payload_hash),
        'decided_by', o.decided_by,
        'decided_at', fleet_utc(o.decided_at),
        'submitted_by', o.submitted_by,
        'created_at', fleet_utc(o.created_at),
        'updated_at', fleet_utc(o.updated_at),
        'unknown_since', fleet_utc(o.unknown_since),
        'escalated_at', fleet_utc(o.escalated_at),
        'resolved_at', fleet_utc(o.resolved_at)
    );
END $$;
