-- Who a payment really goes to: the payee as the provider's directory described it when
-- the intent was prepared, kept with the operation as evidence.
--
-- `payee` is written by the intake (prepare, and the API's intake running the same code)
-- in the insert, never afterwards: it is what the approver is shown, and its `version` is
-- the precondition execute sends with the payment, so changing it later would change what
-- was approved. NULL for an action that names no payee the provider can look up. Its shape
-- is `fleet_core::payee::PayeeEvidence`:
--
--   {"status": "found", "id", "name", "country", "account": {"scheme", "masked",
--    "fingerprint"}, "verified", "version", "looked_up_at"}
--   {"status": "unknown", "id", "reason": "not_found" | "lookup_failed", "looked_up_at"}
--
-- It never holds an account number: the masked form and the provider's fingerprint only.
-- Not part of the payload hash, which stays the hash of the agent's snapshot.

ALTER TABLE operations ADD COLUMN payee jsonb;

-- Checked once, at insert (as signatures_required, 0045: no CHECK constraint that every
-- compare-and-set of the row would evaluate again).
CREATE FUNCTION operations_payee_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.payee IS NOT NULL AND NOT (
        jsonb_typeof(NEW.payee) = 'object'
        AND jsonb_typeof(NEW.payee -> 'id') = 'string'
        AND jsonb_typeof(NEW.payee -> 'looked_up_at') = 'string'
        AND CASE NEW.payee ->> 'status'
            WHEN 'found' THEN
                jsonb_typeof(NEW.payee -> 'name') = 'string'
                AND (NEW.payee ->> 'country') ~ '^[A-Z]{2}$'
                AND (NEW.payee #>> '{account,scheme}') IN ('iban', 'local')
                AND jsonb_typeof(NEW.payee #> '{account,masked}') = 'string'
                AND (NEW.payee #>> '{account,fingerprint}') ~ '^sha256:[0-9a-fA-F]{64}$'
                AND jsonb_typeof(NEW.payee -> 'verified') = 'boolean'
                AND jsonb_typeof(NEW.payee -> 'version') = 'number'
                AND (NEW.payee ->> 'version')::numeric >= 1
            WHEN 'unknown' THEN
                (NEW.payee ->> 'reason') IN ('not_found', 'lookup_failed')
            ELSE false
        END
    ) THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"',
                        'operations_payee_check'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_payee_check';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_payee_valid
    BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_payee_is_valid();

-- As immutable as the snapshot it describes.
CREATE FUNCTION operations_payee_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.payee IS DISTINCT FROM OLD.payee THEN
        RAISE EXCEPTION 'the payee evidence of operation % is immutable', OLD.operation_id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'a payee that changed is a new decision: a new operation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_payee_immutable
    BEFORE UPDATE OF payee ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_payee_is_immutable();

-- The intake writes it in the insert; no component may update it (no UPDATE grant).
GRANT INSERT (payee) ON operations TO fleet_api, fleet_prepare;

-- The API's and the events' view of an operation shows the evidence.
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
