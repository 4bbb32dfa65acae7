-- Who submitted an operation (the authenticated principal of the intake that wrote it).
ALTER TABLE operations ADD COLUMN submitted_by text;

-- The operation as agents and people see it: one definition, used by the HTTP API and by
-- the outcome events, so both always say the same thing. Timestamps are RFC 3339 in UTC.
CREATE FUNCTION fleet_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

CREATE FUNCTION operation_view(o operations) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
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
        'decided_by', o.decided_by,
        'decided_at', fleet_utc(o.decided_at),
        'submitted_by', o.submitted_by,
        'created_at', fleet_utc(o.created_at),
        'updated_at', fleet_utc(o.updated_at),
        'unknown_since', fleet_utc(o.unknown_since),
        'escalated_at', fleet_utc(o.escalated_at),
        'resolved_at', fleet_utc(o.resolved_at)
    )
$$;
