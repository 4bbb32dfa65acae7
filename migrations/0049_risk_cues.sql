-- Risk cues: what about a payment deserves an approver's second look, judged at intake
-- over the tenant's own succeeded payments (`fleet_core::risk`): a first payment to the
-- payee or to its bank account, an account changed since the payee's last payment, an
-- amount far above the payee's usual one, an unverified or unknown payee.
--
-- `risk` is the list of cues found, `[{"cue": "first_payment_to_payee"}, …]` (empty: none),
-- or NULL for an operation that is no payment. Written by the intake in the insert, as
-- the payee evidence it is judged with, and as immutable: it is what the approver was
-- shown and what the policy counted (a flagged payment may need one more approver or a
-- signed approval). The view, and so every event, carries it.

ALTER TABLE operations ADD COLUMN risk jsonb;

CREATE FUNCTION operations_risk_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.risk IS NOT NULL AND jsonb_typeof(NEW.risk) <> 'array' THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"',
                        'operations_risk_check'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_risk_check';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_risk_valid
    BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_risk_is_valid();

CREATE FUNCTION operations_risk_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.risk IS DISTINCT FROM OLD.risk THEN
        RAISE EXCEPTION 'the risk cues of operation % are immutable', OLD.operation_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_risk_immutable
    BEFORE UPDATE OF risk ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_risk_is_immutable();

-- The history the cues are judged over: a tenant's succeeded payments to one payee, and
-- to one account (by its fingerprint). Partial: only what was really paid.
CREATE INDEX operations_paid_to_payee ON operations (tenant_id, (payload ->> 'beneficiary_id'))
    WHERE action = 'payment.create' AND status = 'succeeded';
CREATE INDEX operations_paid_to_account ON operations (tenant_id, (payee #>> '{account,fingerprint}'))
    WHERE action = 'payment.create' AND status = 'succeeded';

GRANT INSERT (risk) ON operations TO fleet_api, fleet_prepare;

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
