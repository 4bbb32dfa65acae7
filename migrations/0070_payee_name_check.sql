-- The payee name check (Verification / Confirmation of Payee): the intake asks the
-- provider's directory whether the name a payment's intent gives (`payload.beneficiary_name`)
-- is the account holder's, and keeps the answer in the payee evidence, beside the payee it
-- describes (`fleet_core::payee::name_check`):
--
--   "name_check": {"result": "match" | "close_match" | "no_match" | "not_possible",
--                  "asked": <the intent's name> | null,
--                  "held"?: <the name the account is held under, for a close_match>,
--                  "why"?: "no_name" | "not_offered" | "directory", for a not_possible}
--
-- The evidence is immutable already (0047): the check is what the approver was shown, and
-- a later change in the directory does not alter it. What the database adds here:
--
-- * the check's shape, and that it is the check of the name the snapshot gives: `asked`
--   is `payload.beneficiary_name` (a check of another name, or none, cannot be kept for
--   a payment that gives one), and an intent that gives none is `not_possible`/`no_name`;
-- * the account scheme `stripe_account`, which a Stripe connected account whose payout
--   account the platform cannot see is described with (`fleet_core::stripe::transfer`),
--   was missing from the list 0062 admitted: such a payee's evidence is admitted now;
-- * every payment.create whose payee was found carries a check (an intake that left it out
--   would leave the policy's name_check table nothing to judge);
-- * the policy in force's `name_check` table (`policies.rules -> action -> 'name_check'`,
--   written only by policies that have one): a result it refuses is not inserted, and a
--   result it asks one more approver for is inserted only with at least the amount's
--   quorum plus one (risk cues may ask more; intake adds those on top).

CREATE OR REPLACE FUNCTION operations_payee_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    check_ jsonb := NEW.payee -> 'name_check';
BEGIN
    IF NEW.payee IS NOT NULL AND NOT (
        jsonb_typeof(NEW.payee) = 'object'
        AND jsonb_typeof(NEW.payee -> 'id') = 'string'
        AND jsonb_typeof(NEW.payee -> 'looked_up_at') = 'string'
        AND CASE NEW.payee ->> 'status'
            WHEN 'found' THEN
                jsonb_typeof(NEW.payee -> 'name') = 'string'
                AND (NEW.payee ->> 'country') ~ '^[A-Z]{2}$'
                AND (NEW.payee #>> '{account,scheme}') IN ('iban', 'local', 'card', 'bank', 'stripe_account')
                AND jsonb_typeof(NEW.payee #> '{account,masked}') = 'string'
                AND (NEW.payee #>> '{account,fingerprint}') ~ '^sha256:[0-9a-fA-F]{64}$'
                AND jsonb_typeof(NEW.payee -> 'verified') = 'boolean'
                AND jsonb_typeof(NEW.payee -> 'version') = 'number'
                AND (NEW.payee ->> 'version')::numeric >= 1
            WHEN 'unknown' THEN
                (NEW.payee ->> 'reason') IN ('not_found', 'lookup_failed')
                AND check_ IS NULL
            ELSE false
        END
    ) THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"',
                        'operations_payee_check'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_payee_check';
    END IF;
    IF NEW.action = 'payment.create' AND NEW.payee ->> 'status' = 'found' AND NOT (
        jsonb_typeof(check_) = 'object'
        AND (check_ -> 'asked') IS NOT DISTINCT FROM COALESCE(NEW.payload -> 'beneficiary_name', 'null'::jsonb)
        AND CASE check_ ->> 'result'
            WHEN 'match' THEN jsonb_typeof(check_ -> 'asked') = 'string'
            WHEN 'no_match' THEN jsonb_typeof(check_ -> 'asked') = 'string'
            WHEN 'close_match' THEN jsonb_typeof(check_ -> 'asked') = 'string'
                AND jsonb_typeof(check_ -> 'held') = 'string'
            WHEN 'not_possible' THEN
                CASE jsonb_typeof(check_ -> 'asked')
                    WHEN 'null' THEN check_ ->> 'why' = 'no_name'
                    ELSE check_ ->> 'why' IN ('not_offered', 'directory')
                END
            ELSE false
        END
    ) THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"',
                        'operations_payee_name_check'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_payee_name_check';
    END IF;
    RETURN NEW;
END $$;

-- The step the policy in force's `name_check` table takes for a kept check: 'allow',
-- 'extra_approver' or 'refuse' (`fleet_core::policy::NameCheckRule::step`).
CREATE FUNCTION fleet_name_check_step(rules jsonb, act text, check_ jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(rules -> act -> 'name_check' ->> (
        CASE check_ ->> 'result'
            WHEN 'close_match' THEN 'close_match'
            WHEN 'no_match' THEN 'no_match'
            WHEN 'not_possible' THEN
                CASE WHEN check_ ->> 'why' = 'no_name' THEN 'no_name' ELSE 'not_possible' END
        END), 'allow')
$$;

-- Runs with the owner's rights to read the policies, as `operations_quorum_of_policy`
-- (0053) does; named to fire after it (Postgres orders a table's BEFORE triggers by name),
-- so a row under another policy is refused for that first. A redelivered snapshot already
-- stored is left to the insert's conflict handling.
CREATE FUNCTION operations_name_check_of_policy() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    rules jsonb;
    step text;
    floor record;
BEGIN
    IF NEW.payee -> 'name_check' IS NULL
       OR EXISTS (SELECT FROM operations WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id) THEN
        RETURN NEW;
    END IF;
    SELECT p.rules INTO rules FROM policies p WHERE p.policy_version = NEW.policy_version;
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

CREATE TRIGGER operations_under_policy_name_check
    BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_name_check_of_policy();
