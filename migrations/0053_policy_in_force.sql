-- The deployment, not the agent, decides which quorum policy governs an operation.
--
-- Until now an intent named its `policy_version` and intake obeyed it, and the intake roles
-- wrote `approvals_required` and `signatures_required` unchecked: an agent could pick the
-- weaker of two policies, and a component's database password could store a large payment
-- needing one unsigned approval. Here the database keeps both rules, whoever inserts:
--
-- * `policies`: every policy version the deployment has, its rules as fleet-core compiles
--   them (`Policy::rules`) and the file's text. Written by the owner only (`fleetctl
--   migrate` loads the policy files; no component role may write it).
-- * `policy_defaults`: the policy in force for an action, for every tenant without an
--   assignment of its own (seeded from `in-force.toml` by `fleetctl migrate`; an
--   administrator's choice is never overwritten by the file).
-- * `policy_assignments`: an administrator's choice for one tenant and action
--   (`fleetctl policy assign`).
-- * `policy_changes`: every change of the three, appended by a trigger, with who made it
--   (`fleet.actor`, as `fleetctl` names its administrator, and the database user).
--
-- Refusals (SQLSTATE 23514, check_violation, docs/design.md "The trust model"):
-- * constraint `operations_policy_in_force`: an operation is inserted only under the
--   policy in force for its tenant and action, and only in a currency that policy bands
--   (when it bands the action's amounts at all);
-- * constraint `operations_quorum_of_policy`: its `approvals_required` and
--   `signatures_required` are at least what that policy asks for its amount, raised by
--   the policy's risk table when a risk cue is recorded (`fleet_policy_floor`, the same
--   rule as `fleet_core::policy::Policy::floor`; a table test holds the two together).
--   Intake may ask for more (an unknown payee, an object made elsewhere), never less;
-- * constraint `policy_names_the_action`: a default or an assignment names a policy that
--   has rules for the action.

CREATE TABLE policies (
    policy_version text PRIMARY KEY CHECK (length(policy_version) BETWEEN 1 AND 256),
    rules          jsonb NOT NULL CHECK (jsonb_typeof(rules) = 'object'),
    source_text    text NOT NULL,
    loaded_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE policy_defaults (
    action         text PRIMARY KEY,
    policy_version text NOT NULL REFERENCES policies (policy_version),
    -- `in-force.toml` when the policy files chose it, else the administrator's name.
    assigned_by    text NOT NULL CHECK (length(assigned_by) BETWEEN 1 AND 256),
    assigned_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE policy_assignments (
    tenant_id      text NOT NULL CHECK (length(tenant_id) BETWEEN 1 AND 256),
    action         text NOT NULL,
    policy_version text NOT NULL REFERENCES policies (policy_version),
    assigned_by    text NOT NULL CHECK (length(assigned_by) BETWEEN 1 AND 256),
    assigned_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, action)
);

CREATE TABLE policy_changes (
    change_id      bigserial PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT now(),
    change         text NOT NULL CHECK (change IN ('policy_loaded', 'policy_changed',
                                                   'default_set', 'default_removed',
                                                   'assigned', 'unassigned')),
    tenant_id      text,
    action         text,
    policy_version text,
    -- Who, as the administrator named themselves (`fleet.actor`), and the database user
    -- that ran the statement (not the client's to choose).
    actor          text NOT NULL,
    db_user        text NOT NULL DEFAULT session_user
);

-- A default or an assignment names a policy with rules for its action.
CREATE FUNCTION policy_names_the_action() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM policies WHERE policy_version = NEW.policy_version
                   AND rules ? NEW.action) THEN
        RAISE EXCEPTION 'policy % has no rules for %', NEW.policy_version, NEW.action
            USING ERRCODE = 'check_violation', CONSTRAINT = 'policy_names_the_action';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER policy_defaults_name_the_action BEFORE INSERT OR UPDATE ON policy_defaults
    FOR EACH ROW EXECUTE FUNCTION policy_names_the_action();
CREATE TRIGGER policy_assignments_name_the_action BEFORE INSERT OR UPDATE ON policy_assignments
    FOR EACH ROW EXECUTE FUNCTION policy_names_the_action();

-- Every change is in `policy_changes`, however it was made.
CREATE FUNCTION policy_change_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    actor text := COALESCE(NULLIF(current_setting('fleet.actor', true), ''), session_user);
BEGIN
    IF TG_TABLE_NAME = 'policies' THEN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO policy_changes (change, policy_version, actor)
                VALUES ('policy_loaded', NEW.policy_version, actor);
        ELSIF NEW.rules IS DISTINCT FROM OLD.rules OR NEW.source_text IS DISTINCT FROM OLD.source_text THEN
            INSERT INTO policy_changes (change, policy_version, actor)
                VALUES ('policy_changed', NEW.policy_version, actor);
        END IF;
    ELSIF TG_TABLE_NAME = 'policy_defaults' THEN
        IF TG_OP = 'DELETE' THEN
            INSERT INTO policy_changes (change, action, policy_version, actor)
                VALUES ('default_removed', OLD.action, OLD.policy_version, actor);
        ELSE
            INSERT INTO policy_changes (change, action, policy_version, actor)
                VALUES ('default_set', NEW.action, NEW.policy_version, actor);
        END IF;
    ELSE
        IF TG_OP = 'DELETE' THEN
            INSERT INTO policy_changes (change, tenant_id, action, policy_version, actor)
                VALUES ('unassigned', OLD.tenant_id, OLD.action, OLD.policy_version, actor);
        ELSE
            INSERT INTO policy_changes (change, tenant_id, action, policy_version, actor)
                VALUES ('assigned', NEW.tenant_id, NEW.action, NEW.policy_version, actor);
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER policies_recorded AFTER INSERT OR UPDATE ON policies
    FOR EACH ROW EXECUTE FUNCTION policy_change_recorded();
CREATE TRIGGER policy_defaults_recorded AFTER INSERT OR UPDATE OR DELETE ON policy_defaults
    FOR EACH ROW EXECUTE FUNCTION policy_change_recorded();
CREATE TRIGGER policy_assignments_recorded AFTER INSERT OR UPDATE OR DELETE ON policy_assignments
    FOR EACH ROW EXECUTE FUNCTION policy_change_recorded();

-- The version in force for a tenant and action: its assignment, else the default.
-- Intake asks it before judging an intent; the insert trigger below asks it again.
CREATE FUNCTION fleet_policy_in_force(tenant text, act text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT COALESCE(
        (SELECT policy_version FROM policy_assignments WHERE tenant_id = tenant AND action = act),
        (SELECT policy_version FROM policy_defaults WHERE action = act))
$$;

REVOKE ALL ON FUNCTION fleet_policy_in_force(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_policy_in_force(text, text) TO fleet_api, fleet_prepare;

-- The least an operation needs under `rules` (one policy's, as `policies.rules` holds
-- them): the band of its currency with the highest start at or below its amount, else the
-- action's own count; raised by the risk table when `flagged`. `refusal` is set instead
-- when the policy has no rules for the action or bands amounts but not in this currency.
-- The same rule as `fleet_core::policy::Policy::floor`, line for line.
CREATE FUNCTION fleet_policy_floor(rules jsonb, act text, payload jsonb, flagged boolean,
                                   OUT approvers integer, OUT signed integer, OUT refusal text)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    q jsonb := rules -> act;
    currency_bands jsonb;
    band jsonb;
    risk_signed integer;
BEGIN
    IF q IS NULL THEN
        refusal := 'action_not_in_policy';
        RETURN;
    END IF;
    approvers := (q ->> 'approvers')::integer;
    signed := (q ->> 'signed')::integer;
    IF q -> 'bands' <> '{}'::jsonb AND jsonb_typeof(payload -> 'amount_minor') = 'number'
       AND jsonb_typeof(payload -> 'currency') = 'string' THEN
        currency_bands := q -> 'bands' -> (payload ->> 'currency');
        IF currency_bands IS NULL THEN
            refusal := 'currency_not_banded';
            RETURN;
        END IF;
        SELECT b INTO band FROM jsonb_array_elements(currency_bands) b
        WHERE (b ->> 'from_amount_minor')::numeric <= (payload ->> 'amount_minor')::numeric
        ORDER BY (b ->> 'from_amount_minor')::numeric DESC
        LIMIT 1;
        IF band IS NOT NULL THEN
            approvers := (band ->> 'approvers')::integer;
            signed := (band ->> 'signed')::integer;
        END IF;
    END IF;
    IF flagged THEN
        risk_signed := COALESCE((q -> 'risk' ->> 'signed_approvals')::integer, 0);
        approvers := GREATEST(LEAST(approvers + COALESCE((q -> 'risk' ->> 'extra_approvers')::integer, 0), 10),
                              risk_signed);
        signed := LEAST(GREATEST(signed, risk_signed), approvers);
    END IF;
END $$;

-- Whoever inserts an operation, it is under the policy in force and asks at least what
-- that policy asks. Runs with the owner's rights to read the policies, which no component
-- role may read or write itself. A row whose operation id is stored already is left to
-- the insert's conflict handling (a redelivery of a snapshot judged when it was stored).
CREATE FUNCTION operations_quorum_of_policy() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    in_force text;
    floor record;
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
    SELECT * INTO floor FROM fleet_policy_floor(
        (SELECT rules FROM policies WHERE policy_version = in_force), NEW.action, NEW.payload,
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
    RETURN NEW;
END $$;

-- Postgres fires a table's BEFORE triggers in the order of their names: this one is named
-- to come after the row's shape is checked (`operations_snapshot_valid`, `…_payee_valid`,
-- `…_risk_valid`, `…_submitter_is_granted`), so a malformed row is refused for what is wrong
-- with it before the policy is asked about it.
CREATE TRIGGER operations_under_policy_in_force
    BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_quorum_of_policy();
