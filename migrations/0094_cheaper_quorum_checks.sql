-- The quorum rule and the approval checks around it, cheaper to run, with the same rules.
--
-- `fleet_quorum_count` runs several times for every operation (for each outcome event's
-- view, for the approve statement, for the move to approved and for the claim, through
-- `fleet_quorum_met`); most of its cost is opening and scanning the tables of its join
-- once per call, not the few rows it reads. Measured per call on a copy of a benchmark's
-- database (docs/benchmark.md), what changes here:
--
-- * `fleet_quorum_count` counts the live approvals of the stored hash first, and reads
--   `approver_keys` only when one of them carries a signature: an unsigned approval can
--   never count as signed, so the keys of an operation approved without signatures are
--   not looked at (the key subquery of 0089 was set up at every call, run or not). When
--   some counted approval is signed, the signed ones are counted by the same join with
--   the key joined by its primary key: the same approvals as 0089's EXISTS, since an
--   approval names one key.
-- * `fleet_quorum_met` reads the operation's requirements and takes the count as one
--   call, instead of a function scan joined to the operation.
-- * `operations_approved_by_quorum` takes the count as one call too (was a function scan
--   that materialised its one row), and `approvals_of_a_pending_snapshot` reads the five
--   columns it judges instead of the whole operation row.
--
-- What each returns and refuses is unchanged, value for value: the same conditions, the
-- same errors, the same rights (CREATE OR REPLACE keeps the owner and the grants;
-- SECURITY DEFINER, search_path and volatility as before), still PL/pgSQL.

CREATE OR REPLACE FUNCTION fleet_quorum_count(op text, tenant text, OUT counted bigint, OUT signed bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    -- `signed` holds, for now, how many counted approvals carry a signature at all.
    SELECT count(*), count(*) FILTER (WHERE a.signature IS NOT NULL)
    INTO counted, signed
    FROM operations o
    JOIN approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
    JOIN principals pr ON pr.name = a.principal
    JOIN principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
    WHERE o.operation_id = op AND o.tenant_id = tenant
      AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
      AND a.principal IS DISTINCT FROM o.submitted_by
      AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at;
    IF signed > 0 THEN
        -- Of those, the ones signed with a key of their approver's registered before the
        -- approval and not removed.
        SELECT count(*) INTO signed
        FROM operations o
        JOIN approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
        JOIN principals pr ON pr.name = a.principal
        JOIN principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
        JOIN approver_keys k ON k.key_id = a.key_id
        WHERE o.operation_id = op AND o.tenant_id = tenant
          AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
          AND a.principal IS DISTINCT FROM o.submitted_by
          AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at
          AND a.signature IS NOT NULL
          AND k.principal = a.principal AND k.registered_at < a.at AND k.removed_at IS NULL;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION fleet_quorum_met(op text, tenant text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    need record;
    q record;
BEGIN
    SELECT o.approvals_required, o.signatures_required INTO need
    FROM operations o WHERE o.operation_id = op AND o.tenant_id = tenant;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    q := fleet_quorum_count(op, tenant);
    RETURN q.counted >= need.approvals_required AND q.signed >= need.signatures_required;
END $$;

CREATE OR REPLACE FUNCTION operations_approved_by_quorum() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    q record;
BEGIN
    IF NEW.decided_by LIKE 'mandate:%' THEN
        IF NEW.status = 'not_started' AND NEW.approval_expires_at > now()
           AND fleet_mandate_approved(NEW.operation_id, NEW.tenant_id, NEW.decided_by) THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'operation % cannot be approved by %: no live use of that mandate', NEW.operation_id, NEW.decided_by
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_approved_by_quorum';
    END IF;
    q := fleet_quorum_count(NEW.operation_id, NEW.tenant_id);
    IF NEW.status <> 'not_started' OR NEW.approval_expires_at <= now()
       OR q.counted < NEW.approvals_required THEN
        RAISE EXCEPTION 'operation % cannot be approved: % of % approvals of its snapshot by live approvers of its tenant are recorded',
                NEW.operation_id, q.counted, NEW.approvals_required
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_approved_by_quorum';
    END IF;
    IF q.signed < NEW.signatures_required THEN
        RAISE EXCEPTION 'operation % needs % signed approvals of its hash by live approvers to be approved; it has %',
                NEW.operation_id, NEW.signatures_required, q.signed
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_signed_approvals_check';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION approvals_of_a_pending_snapshot() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    op record;
BEGIN
    SELECT o.payload_hash, o.approval_status, o.status, o.approval_expires_at, o.submitted_by
    INTO op
    FROM operations o WHERE o.operation_id = NEW.operation_id AND o.tenant_id = NEW.tenant_id;
    IF NOT FOUND OR NEW.payload_hash <> op.payload_hash OR op.approval_status <> 'pending'
       OR op.status <> 'not_started' OR op.approval_expires_at <= now()
       OR NEW.principal IS NOT DISTINCT FROM op.submitted_by
       OR NEW.voided_at IS NOT NULL
       OR fleet_live_approver_since(NEW.principal, NEW.tenant_id) IS NULL THEN
        RAISE EXCEPTION 'approval of operation % by % refused: only a live approver of its tenant, other than the submitter, approves the stored hash of a pending, unstarted, unexpired operation',
                NEW.operation_id, NEW.principal
            USING ERRCODE = 'check_violation', TABLE = 'approvals',
                  CONSTRAINT = 'approvals_of_a_pending_snapshot';
    END IF;
    RETURN NEW;
END $$;
