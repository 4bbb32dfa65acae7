-- The snapshot's own rules are checked once, when the row is inserted, instead of on
-- every update.
--
-- Postgres evaluates every CHECK constraint of a table on every UPDATE of a row, whichever
-- columns the UPDATE sets, and prepares each constraint's expression again for every
-- statement that runs (it reads the stored expression back and plans it, per execution).
-- On `operations`, which every compare-and-set updates, that was about 26 µs of a 49 µs
-- single-row UPDATE, and half of it was spent on five columns no UPDATE may change: the
-- operation id, the action, the provider, the payload hash and the quorum. Those belong
-- to the immutable snapshot: `operations_snapshot_immutable` already refuses any UPDATE
-- that changes them. Checked at INSERT, they hold for the row's whole life.
--
-- The trigger refuses exactly what the constraints refused, with the same SQLSTATE
-- (23514, check_violation) and the same constraint names, so a client sees the same
-- error. The rules on columns that do change (status, approval status, fence, the lease,
-- the approved hash) stay CHECK constraints.
--
-- Whoever admits a new action or provider redefines `operations_snapshot_is_valid` in a
-- new migration, with the list extended.

ALTER TABLE operations
    DROP CONSTRAINT operations_operation_id_check,
    DROP CONSTRAINT operations_action_check,
    DROP CONSTRAINT operations_provider_check,
    DROP CONSTRAINT operations_payload_hash_check,
    DROP CONSTRAINT operations_approvals_required_check;

CREATE FUNCTION operations_snapshot_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    violated text;
BEGIN
    -- As for a CHECK constraint, NULL passes here; the columns' NOT NULL refuses it.
    IF NEW.operation_id !~ '^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$' THEN
        violated := 'operations_operation_id_check';
    ELSIF NEW.action NOT IN ('payment.create', 'refund.create', 'crm.deal.create', 'crm.deal.update',
                             'order.status.change', 'contract.send') THEN
        violated := 'operations_action_check';
    -- The providers the fleet has adapters for, as `fleet_core::ProviderName` names them.
    ELSIF NEW.provider NOT IN ('payments', 'crm', 'orders', 'esign') THEN
        violated := 'operations_provider_check';
    ELSIF NEW.payload_hash !~ '^sha256:[0-9a-f]{64}$' THEN
        violated := 'operations_payload_hash_check';
    ELSIF NEW.approvals_required NOT BETWEEN 1 AND 10 THEN
        violated := 'operations_approvals_required_check';
    END IF;
    IF violated IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_snapshot_valid
    BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_snapshot_is_valid();
