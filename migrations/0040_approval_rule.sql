-- The approval rule, held by the database whoever writes.
--
-- Until now the rule "an operation runs only after as many distinct people as its quorum
-- asks approved its exact snapshot" was kept by the code that usually writes the rows: a
-- role allowed to insert operations could insert one already approved, and the role that
-- records decisions could set `approval_status = 'approved'` with no approval behind it.
-- Here the database itself refuses both, and refuses history rows a component has no
-- business writing. Every refusal has a documented SQLSTATE (docs/design.md, "The trust
-- model"):
--
-- * 23514 (check_violation), constraint `operations_inserted_pending`: an operation is born
--   `not_started` and `pending`, with no decision, lease, attempt or outcome;
-- * 23514, constraint `operations_approval_transition`: the approval status moves only
--   pending → approved | rejected | expired and approved → rejected | expired (an approval
--   whose window closed before execution); the approved hash is
--   set only by the move to approved, to the stored payload hash; who decided changes only
--   with a decision;
-- * 23514, constraint `operations_approved_by_quorum`: the move to approved needs, in the
--   approvals table, at least `approvals_required` distinct approvers of the stored hash,
--   none of them the principal that submitted it, while the operation is unstarted and its
--   approval window open;
-- * 23514, constraint `approvals_of_a_pending_snapshot`: an approval is recorded only by an
--   existing principal (not removed, not the submitter) for the stored hash of an operation
--   still pending, unstarted and unexpired;
-- * 42501 (insufficient_privilege): a history row whose kind or actor the writing role may
--   not write (see `operation_events_author_is_allowed`).
--
-- Execute's claim counts the approvals again in the statement that claims
-- (`shared/store/src/claim.rs`), so a row that somehow reads `approved` without its quorum
-- is still never claimed.

-- The component a database role acts as: the component group role it has the privileges
-- of, or NULL for the owner of the tables and superusers (the administrator, who runs the
-- migrations and `fleetctl`), or for a role that is none of these (which is granted
-- nothing). A superuser has every role's privileges, so it is recognised first.
CREATE FUNCTION fleet_component() RETURNS text LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r text;
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
       OR current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class
                          WHERE oid = 'public.operations'::regclass) THEN
        RETURN NULL;
    END IF;
    FOREACH r IN ARRAY ARRAY['fleet_api', 'fleet_prepare', 'fleet_execute', 'fleet_reconcile',
                             'fleet_webhook_ingest', 'fleet_relay'] LOOP
        IF pg_has_role(current_user, r, 'USAGE') THEN
            RETURN r;
        END IF;
    END LOOP;
    RETURN 'none';
END $$;

-- Born pending: the one shape an operation may be inserted in. Added to the checks of the
-- snapshot made at insert (same SQLSTATE and style as the constraints they replaced).
CREATE OR REPLACE FUNCTION operations_snapshot_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
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
    ELSIF NEW.status <> 'not_started' OR NEW.approval_status <> 'pending'
       OR NEW.approved_hash IS NOT NULL OR NEW.decided_by IS NOT NULL OR NEW.decided_at IS NOT NULL
       OR NEW.status_reason IS NOT NULL OR NEW.fence <> 0 OR NEW.lease_owner IS NOT NULL
       OR NEW.lease_expires_at IS NOT NULL OR NEW.attempts <> 0 OR NEW.external_id IS NOT NULL
       OR NEW.provider_request_id IS NOT NULL OR NEW.result IS NOT NULL OR NEW.error_code IS NOT NULL
       OR NEW.deadline_at IS NOT NULL OR NEW.unknown_since IS NOT NULL OR NEW.escalated_at IS NOT NULL
       OR NEW.resolved_at IS NOT NULL OR NEW.audited_at IS NOT NULL OR NEW.lookup_failures <> 0
       OR NEW.next_lookup_at IS NOT NULL THEN
        violated := 'operations_inserted_pending';
    END IF;
    IF violated = 'operations_inserted_pending' THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated,
                  HINT = 'an operation is inserted not_started and pending; approvals decide the rest';
    ELSIF violated IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated;
    END IF;
    RETURN NEW;
END $$;

-- The approval status's own state machine, checked before the row is written.
CREATE FUNCTION operations_approval_moves() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    becomes_approved boolean := NEW.approval_status = 'approved' AND OLD.approval_status <> 'approved';
    decided boolean := NEW.approval_status IS DISTINCT FROM OLD.approval_status;
BEGIN
    IF (decided AND NOT ((OLD.approval_status = 'pending' AND NEW.approval_status IN ('approved', 'rejected', 'expired'))
                         OR (OLD.approval_status = 'approved' AND NEW.approval_status IN ('rejected', 'expired'))))
       OR (NEW.approved_hash IS DISTINCT FROM OLD.approved_hash
           AND NOT (becomes_approved AND NEW.approved_hash = NEW.payload_hash))
       OR (NEW.decided_by IS DISTINCT FROM OLD.decided_by
           AND NOT (decided AND NEW.approval_status IN ('approved', 'rejected'))) THEN
        RAISE EXCEPTION 'operation %: approval % → % (approved hash, decider) is not a move the approval rule allows',
                OLD.operation_id, OLD.approval_status, NEW.approval_status
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_approval_transition';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_approval_moves
    BEFORE UPDATE OF approval_status, approved_hash, decided_by ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_approval_moves();

-- The distinct approvers of the stored hash that count towards the quorum: never the
-- principal that submitted the operation. (The approvals table's key is (operation,
-- principal), so its rows are distinct approvers already.)
CREATE FUNCTION fleet_approvals_counted(op text, hash text, submitter text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM approvals
    WHERE operation_id = op AND payload_hash = hash AND principal IS DISTINCT FROM submitter
$$;

-- The quorum, checked after the statement that approves has run to its end: an approval
-- recorded by the same statement (the store records the approval and the move in one) is
-- seen here.
CREATE FUNCTION operations_approved_by_quorum() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> 'not_started' OR NEW.approval_expires_at <= now()
       OR fleet_approvals_counted(NEW.operation_id, NEW.payload_hash, NEW.submitted_by) < NEW.approvals_required THEN
        RAISE EXCEPTION 'operation % cannot be approved: % of % distinct approvals of its snapshot are recorded',
                NEW.operation_id,
                fleet_approvals_counted(NEW.operation_id, NEW.payload_hash, NEW.submitted_by),
                NEW.approvals_required
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_approved_by_quorum';
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER operations_approved_by_quorum
    AFTER UPDATE OF approval_status ON operations
    FOR EACH ROW
    WHEN (NEW.approval_status = 'approved' AND OLD.approval_status <> 'approved')
    EXECUTE FUNCTION operations_approved_by_quorum();

-- An approval is evidence of a person's decision about one pending snapshot.
CREATE FUNCTION approvals_of_a_pending_snapshot() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    op operations;
BEGIN
    SELECT * INTO op FROM operations WHERE operation_id = NEW.operation_id;
    IF NOT FOUND OR NEW.payload_hash <> op.payload_hash OR op.approval_status <> 'pending'
       OR op.status <> 'not_started' OR op.approval_expires_at <= now()
       OR NEW.principal IS NOT DISTINCT FROM op.submitted_by
       OR NOT EXISTS (SELECT FROM principals p WHERE p.name = NEW.principal AND p.removed_at IS NULL) THEN
        RAISE EXCEPTION 'approval of operation % by % refused: only an existing principal other than the submitter approves the stored hash of a pending, unstarted, unexpired operation',
                NEW.operation_id, NEW.principal
            USING ERRCODE = 'check_violation', TABLE = 'approvals',
                  CONSTRAINT = 'approvals_of_a_pending_snapshot';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER approvals_of_a_pending_snapshot
    BEFORE INSERT ON approvals
    FOR EACH ROW EXECUTE FUNCTION approvals_of_a_pending_snapshot();

-- History has authors. Each component writes only its own kinds of history, as itself:
--
-- | component      | kinds                                             | actor                      |
-- |----------------|---------------------------------------------------|----------------------------|
-- | prepare        | prepared, transition (a superseded operation)     | prepare                    |
-- | api            | as prepare (the API's intake is prepare's code);  | prepare                    |
-- |                | approved, approval_recorded (with the approval    | approver:<principal>       |
-- |                | row of that principal for the stored hash);       |                            |
-- |                | transition (a rejection)                          | approver:<principal>       |
-- |                | transition, escalated (an operator's decision)    | operator:<principal>       |
-- |                | approval_expired (seen by an approver)            | approver                   |
-- | execute        | transition, escalated                             | execute                    |
-- | reconcile      | transition, escalated, lookup, audited,           | reconcile                  |
-- |                | approval_expired; the provider events that        | webhook-ingest             |
-- |                | arrived before their operation (transition,       |                            |
-- |                | webhook_conflict, escalated)                      |                            |
-- | webhook-ingest | transition, webhook_conflict, escalated           | webhook-ingest             |
-- | relay          | nothing                                           |                            |
--
-- A person's actor names an existing principal, and only the API writes it; only
-- the API's rows say how the person signed in. The owner (migrations, `fleetctl`) is not
-- held: it owns the tables and could drop this trigger anyway.
--
-- Runs with the rights of the role that writes (not SECURITY DEFINER), so `current_user`
-- is that role. What it looks up about people goes through the two functions below, which
-- read with the owner's rights: a statement is checked for every table it names, in every
-- branch, and a worker's role may not read principals.
CREATE FUNCTION fleet_principal_exists(p text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT FROM principals WHERE name = p AND removed_at IS NULL)
$$;

CREATE FUNCTION fleet_approval_recorded(op text, p text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT FROM approvals a JOIN operations o USING (operation_id)
                   WHERE a.operation_id = op AND a.principal = p AND a.payload_hash = o.payload_hash)
$$;

CREATE FUNCTION operation_events_author_is_allowed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    component text := fleet_component();
    person text;
    allowed boolean;
BEGIN
    IF component IS NULL THEN
        RETURN NEW;
    END IF;
    person := substring(NEW.actor FROM '^(?:approver|operator):(.+)$');
    allowed := CASE component
        WHEN 'fleet_prepare' THEN
            NEW.actor = 'prepare' AND NEW.kind IN ('prepared', 'transition')
        WHEN 'fleet_api' THEN
            (NEW.actor = 'prepare' AND NEW.kind IN ('prepared', 'transition'))
            OR (NEW.actor = 'approver' AND NEW.kind = 'approval_expired')
            OR (NEW.actor LIKE 'approver:%' AND NEW.kind IN ('approved', 'approval_recorded')
                AND fleet_approval_recorded(NEW.operation_id, person))
            OR (NEW.actor LIKE 'approver:%' AND NEW.kind = 'transition' AND NEW.reason = 'approval_rejected'
                AND fleet_principal_exists(person))
            OR (NEW.actor LIKE 'operator:%' AND NEW.kind IN ('transition', 'escalated')
                AND fleet_principal_exists(person))
        WHEN 'fleet_execute' THEN
            NEW.actor = 'execute' AND NEW.kind IN ('transition', 'escalated')
        WHEN 'fleet_reconcile' THEN
            (NEW.actor = 'reconcile'
             AND NEW.kind IN ('transition', 'escalated', 'lookup', 'audited', 'approval_expired'))
            OR (NEW.actor = 'webhook-ingest' AND NEW.kind IN ('transition', 'webhook_conflict', 'escalated'))
        WHEN 'fleet_webhook_ingest' THEN
            NEW.actor = 'webhook-ingest' AND NEW.kind IN ('transition', 'webhook_conflict', 'escalated')
        ELSE false
    END;
    -- How a person signed in is the API's to say, and only of a person's row.
    allowed := COALESCE(allowed, false)
        AND (NEW.signed_in_with IS NULL OR (component = 'fleet_api' AND person IS NOT NULL));
    IF NOT allowed THEN
        RAISE EXCEPTION 'the % role may not write a history row of kind % by %', component, NEW.kind, NEW.actor
            USING ERRCODE = 'insufficient_privilege', TABLE = 'operation_events';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operation_events_author_is_allowed
    BEFORE INSERT ON operation_events
    FOR EACH ROW EXECUTE FUNCTION operation_events_author_is_allowed();
