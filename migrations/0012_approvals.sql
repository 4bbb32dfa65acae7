-- Approval by a quorum of distinct people, and a record of who decided and how they
-- signed in.

-- How many distinct approvers the operation needs: fixed when it is prepared, from the
-- quorum policy its policy_version names, so a later edit of the policy file never
-- changes what an operation already waiting needs.
ALTER TABLE operations ADD COLUMN approvals_required smallint NOT NULL DEFAULT 1
    CHECK (approvals_required BETWEEN 1 AND 10);

-- One row per approver of an operation: the quorum counts rows, so a principal that
-- approves twice is still one approval. Written only while the operation is pending, not
-- started, unexpired and for its stored hash (the store holds the operation's row lock
-- while it checks and writes, so concurrent approvers are counted one after the other).
CREATE TABLE approvals (
    operation_id   text NOT NULL REFERENCES operations (operation_id),
    principal      text NOT NULL CHECK (principal ~ '^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$'),
    -- How the principal proved who it was: a bearer token, or an OpenID Connect sign-in.
    signed_in_with text NOT NULL CHECK (signed_in_with IN ('token', 'oidc')),
    -- The snapshot hash the approver saw (always the operation's: anything else is refused).
    payload_hash   text NOT NULL CHECK (payload_hash ~ '^sha256:[0-9a-f]{64}$'),
    at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, principal)
);

-- An approval is evidence: it is never changed or taken back (a person who changes their
-- mind rejects the operation instead).
CREATE FUNCTION approvals_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'approvals is append-only (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

CREATE TRIGGER approvals_append_only
    BEFORE UPDATE OR DELETE ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_are_append_only();
CREATE TRIGGER approvals_no_truncate
    BEFORE TRUNCATE ON approvals
    FOR EACH STATEMENT EXECUTE FUNCTION approvals_are_append_only();

-- How the actor of a person's decision signed in ('token' or 'oidc'); NULL for the
-- workers' own rows.
ALTER TABLE operation_events ADD COLUMN signed_in_with text
    CHECK (signed_in_with IN ('token', 'oidc'));

-- The quorum an operation needs and who proposed it are as immutable as the snapshot:
-- lowering the one or rewriting the other would let a single person approve alone.
CREATE OR REPLACE FUNCTION operations_snapshot_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.operation_id       IS DISTINCT FROM OLD.operation_id
    OR NEW.tenant_id          IS DISTINCT FROM OLD.tenant_id
    OR NEW.action             IS DISTINCT FROM OLD.action
    OR NEW.provider           IS DISTINCT FROM OLD.provider
    OR NEW.target             IS DISTINCT FROM OLD.target
    OR NEW.payload            IS DISTINCT FROM OLD.payload
    OR NEW.payload_hash       IS DISTINCT FROM OLD.payload_hash
    OR NEW.policy_version     IS DISTINCT FROM OLD.policy_version
    OR NEW.data_version       IS DISTINCT FROM OLD.data_version
    OR NEW.idempotency_key    IS DISTINCT FROM OLD.idempotency_key
    OR NEW.approvals_required IS DISTINCT FROM OLD.approvals_required
    OR NEW.submitted_by       IS DISTINCT FROM OLD.submitted_by THEN
        RAISE EXCEPTION 'the snapshot of operation % is immutable', OLD.operation_id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'a changed intent is a new operation that supersedes this one';
    END IF;
    RETURN NEW;
END $$;

DROP TRIGGER operations_snapshot_immutable ON operations;
CREATE TRIGGER operations_snapshot_immutable
    BEFORE UPDATE OF operation_id, tenant_id, action, provider, target, payload, payload_hash,
                     policy_version, data_version, idempotency_key, approvals_required, submitted_by
    ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_snapshot_is_immutable();

-- The view gains the quorum's progress: approvals_received of approvals_required distinct
-- approvers (of the stored hash). Every other key is as before.
CREATE OR REPLACE FUNCTION operation_view(o operations) RETURNS jsonb LANGUAGE sql STABLE AS $$
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
    )
$$;
