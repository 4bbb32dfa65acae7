-- The `possible_duplicate` risk cue (`fleet_core::risk::duplicate`) names the latest other
-- payment to the payee, made in the window, that may still pay: first one for the same
-- invoice, else one of the same amount in the same currency. Intake used to read the
-- payee's latest hundred payments of the window (0057's index) and let the rule pick;
-- a busy payee's duplicate older than those hundred was missed, and each intake read up
-- to a hundred rows to keep at most one.
--
-- Now intake asks each question directly: the latest payment for the same invoice, and
-- the latest of the same amount and currency, each one probe of its own index, backwards
-- from the newest, stopping at the first row that may still pay. What it reads no longer
-- grows with the payee's history. The rule in core still judges the (at most two) rows.
--
-- As 0057's, the indexes are partial on the action only, never on the status: rows do
-- not move in and out of them as payments settle, and no plan hangs on statistics of how
-- many rows are in which status. The amount is indexed as its JSON value
-- (`payload -> 'amount_minor'`): JSON numbers compare as numbers, and an expression with
-- no cast cannot fail on a row the snapshot rules would let in. `operation_id` closes each
-- key, so "latest" (created_at, then operation id) is the index's own order.
--
-- 0057's index answered only the old read; the two new ones answer the new one, so it goes.
-- No function, trigger or right changes.

CREATE INDEX operations_payments_by_invoice
    ON operations (tenant_id, (payload ->> 'beneficiary_id'), (payload ->> 'invoice_id'),
                   created_at, operation_id)
    WHERE action = 'payment.create';

CREATE INDEX operations_payments_by_amount
    ON operations (tenant_id, (payload ->> 'beneficiary_id'), (payload ->> 'currency'),
                   (payload -> 'amount_minor'), created_at, operation_id)
    WHERE action = 'payment.create';

DROP INDEX operations_recent_payments_to_payee;

-- The insert's two policy triggers as one. `operations_under_policy_in_force` (0053) and
-- `operations_under_policy_name_check` (0070) both ran with the owner's rights, both
-- first asked whether the operation was stored already (a redelivery, left to the
-- insert's conflict handling), and the second read again the rules of the policy the
-- first had just proved in force. Each row paid two SECURITY DEFINER calls (each sets
-- and restores search_path), two primary-key probes and two reads of `policies`.
--
-- Now `operations_quorum_of_policy` does both, in the order they fired (the name check
-- fired right after the quorum: no trigger's name falls between theirs), with the same
-- refusals, the same errors and constraint names: the policy in force, then its floor,
-- then the quorum asked, then the payee name check (`fleet_name_check_step`, 0070) under
-- the same rules. The rights (SECURITY DEFINER, search_path) are as before; the name
-- check's trigger and function go.
CREATE OR REPLACE FUNCTION operations_quorum_of_policy() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    in_force text;
    rules jsonb;
    floor record;
    step text;
BEGIN
    IF EXISTS (SELECT FROM operations WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id) THEN
        RETURN NEW;
    END IF;
    in_force := fleet_policy_in_force(NEW.tenant_id, NEW.action);
    IF in_force IS DISTINCT FROM NEW.policy_version THEN
        RAISE EXCEPTION 'operation %: policy % is not the one in force for its tenant and action (%)',
                NEW.operation_id, NEW.policy_version, COALESCE(in_force, 'none')
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_policy_in_force';
    END IF;
    SELECT p.rules INTO rules FROM policies p WHERE p.policy_version = in_force;
    SELECT * INTO floor FROM fleet_policy_floor(
        rules, NEW.action, NEW.payload,
        CASE WHEN jsonb_typeof(NEW.risk) = 'array' THEN jsonb_array_length(NEW.risk) > 0 ELSE false END);
    IF floor.refusal IS NOT NULL THEN
        RAISE EXCEPTION 'operation %: policy % refuses it (%)', NEW.operation_id, in_force, floor.refusal
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_policy_in_force';
    END IF;
    IF NEW.approvals_required < floor.approvers OR NEW.signatures_required < floor.signed THEN
        RAISE EXCEPTION 'operation %: % approvals (% signed) asked where policy % asks % (% signed)',
                NEW.operation_id, NEW.approvals_required, NEW.signatures_required, in_force,
                floor.approvers, floor.signed
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_quorum_of_policy';
    END IF;
    -- The payee name check under the same policy (`in_force` is NEW.policy_version here).
    IF NEW.payee -> 'name_check' IS NULL THEN
        RETURN NEW;
    END IF;
    step := fleet_name_check_step(rules, NEW.action, NEW.payee -> 'name_check');
    IF step = 'refuse' THEN
        RAISE EXCEPTION 'operation %: policy % refuses a payee name check of %', NEW.operation_id,
                NEW.policy_version, NEW.payee #>> '{name_check,result}'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_name_check_of_policy';
    ELSIF step = 'extra_approver' THEN
        SELECT * INTO floor FROM fleet_policy_floor(rules, NEW.action, NEW.payload, false);
        IF NEW.approvals_required < LEAST(floor.approvers + 1, 10) THEN
            RAISE EXCEPTION 'operation %: % approvals asked where policy % asks % for a payee name check of %',
                    NEW.operation_id, NEW.approvals_required, NEW.policy_version,
                    LEAST(floor.approvers + 1, 10), NEW.payee #>> '{name_check,result}'
                USING ERRCODE = 'check_violation', TABLE = 'operations',
                      CONSTRAINT = 'operations_name_check_of_policy';
        END IF;
    END IF;
    RETURN NEW;
END $$;

DROP TRIGGER operations_under_policy_name_check ON operations;
DROP FUNCTION operations_name_check_of_policy();
