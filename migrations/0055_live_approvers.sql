-- Only live approvers of the tenant count; a removal revokes.
--
-- Until now an approval counted for as long as its row existed: an approver removed
-- (`fleetctl principal remove`) after approving still completed the quorum with the next
-- approval, a principal of another tenant or of another role could be counted if its row
-- got written, and a name added back found its old keys working again. Here the quorum is
-- counted over the approvers as they are at the moment of counting, by one SQL function
-- that the approval trigger, the API's approve statement and execute's claim all call, and
-- a principal that stops being a live approver loses its keys and its pending approvals in
-- the statement that changes it, whoever runs that statement.
--
-- An approval counts when all of these hold at the moment of counting
-- (`fleet_quorum_count`, mirrored by `fleet_core::live_quorum`, a table test holds the two
-- together):
-- * it is of the operation's stored hash, not by the principal that submitted it, and not
--   void;
-- * its principal exists, is not removed, has the role `approver` (the one role that may
--   approve, `fleet_core::Role::may`), and is granted the operation's tenant by a grant
--   made no later than the approval (a grant withdrawn and made again does not revive what
--   was approved under the old one);
-- and it counts as signed when, in addition, it carries a signature by a key registered
-- for its principal before the approval and not removed since. (The database cannot check
-- the signature bytes; fleet-execute does, before its call.)
--
-- Refusals, each with its SQLSTATE and constraint name:
-- * 23514 `operations_approved_by_quorum`: the move to approved without enough counted
--   approvals (now also raised by the claim's statement never: the claim simply does not
--   claim such a row);
-- * 23514 `operations_signed_approvals_check`: the move to approved without enough
--   counted signed approvals (the same trigger now, one function);
-- * 23514 `approvals_of_a_pending_snapshot`: an approval by anyone but a live approver
--   of the operation's tenant;
-- * 23514 `operations_approval_transition`: approved → pending is a move only while the
--   operation is unstarted and its counted approvals no longer make the quorum;
-- * 23000 (integrity_constraint_violation): an approvals row changed other than by being
--   voided once.

-- An approval voided keeps its row (evidence of who approved what, when) and says when
-- and why it stopped counting. Set once, never cleared.
ALTER TABLE approvals
    ADD COLUMN voided_at timestamptz,
    ADD COLUMN voided_reason text
        CHECK (voided_reason IN ('approver_removed', 'approver_role_changed', 'tenant_withdrawn')),
    ADD CONSTRAINT approvals_void_recorded CHECK ((voided_at IS NULL) = (voided_reason IS NULL));

-- Append-only, except for the one change a void makes: voided_at and voided_reason set
-- from nothing, every other column as it was. (No component role holds UPDATE on
-- approvals; the void is written by `fleet_void_approvals` with the owner's rights.)
CREATE OR REPLACE FUNCTION approvals_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.voided_at IS NULL AND NEW.voided_at IS NOT NULL
       AND (NEW.operation_id, NEW.tenant_id, NEW.principal, NEW.signed_in_with, NEW.payload_hash,
            NEW.at, NEW.key_id, NEW.signature, NEW.signed_expires_at)
           IS NOT DISTINCT FROM
           (OLD.operation_id, OLD.tenant_id, OLD.principal, OLD.signed_in_with, OLD.payload_hash,
            OLD.at, OLD.key_id, OLD.signature, OLD.signed_expires_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'approvals is append-only (% refused); an approval is only ever voided, once', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

-- Whether `p` is, now, an approver that may approve for `tenant`, and since when: the
-- time of the tenant grant (NULL: not a live approver of the tenant). With the owner's
-- rights, since no worker role reads principals.
CREATE FUNCTION fleet_live_approver_since(p text, tenant text) RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT pt.granted_at FROM principals pr JOIN principal_tenants pt ON pt.principal = pr.name
    WHERE pr.name = p AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.tenant_id = tenant
$$;
REVOKE ALL ON FUNCTION fleet_live_approver_since(text, text) FROM PUBLIC;

-- A principal's standing now, for one tenant: its role, whether it is removed, and when
-- it was granted the tenant (NULL: not granted); no row for a name that is no principal.
-- What fleet-execute reads of each approver to apply `fleet_core::live_quorum` itself
-- before a signed operation's call; with the owner's rights (execute reads no principals).
CREATE FUNCTION fleet_approver_standing(p text, tenant text,
                                        OUT role text, OUT removed boolean, OUT granted_at timestamptz)
RETURNS SETOF record LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT pr.role, pr.removed_at IS NOT NULL, pt.granted_at
    FROM principals pr
    LEFT JOIN principal_tenants pt ON pt.principal = pr.name AND pt.tenant_id = tenant
    WHERE pr.name = p
$$;
REVOKE ALL ON FUNCTION fleet_approver_standing(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_approver_standing(text, text) TO fleet_execute;

-- The quorum rule, once: how many approvals of the operation count now, and how many of
-- them count as signed (see the rule at the top). One statement over the operation's
-- approvals; an operation that does not exist counts nothing.
CREATE FUNCTION fleet_quorum_count(op text, tenant text, OUT counted bigint, OUT signed bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT count(*),
           count(*) FILTER (WHERE a.signature IS NOT NULL AND EXISTS (
               SELECT FROM approver_keys k
               WHERE k.key_id = a.key_id AND k.principal = a.principal
                 AND k.registered_at < a.at AND k.removed_at IS NULL))
    FROM operations o
    JOIN approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
    JOIN principals pr ON pr.name = a.principal
    JOIN principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
    WHERE o.operation_id = op AND o.tenant_id = tenant
      AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
      AND a.principal IS DISTINCT FROM o.submitted_by
      AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at
$$;
REVOKE ALL ON FUNCTION fleet_quorum_count(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_quorum_count(text, text) TO fleet_api, fleet_execute;

-- Whether the operation's counted approvals make its quorum: approvals_required of them,
-- signatures_required of them signed. What the approval trigger, the approve statement
-- and the claim ask.
CREATE FUNCTION fleet_quorum_met(op text, tenant text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT q.counted >= o.approvals_required AND q.signed >= o.signatures_required
    FROM operations o, fleet_quorum_count(o.operation_id, o.tenant_id) q
    WHERE o.operation_id = op AND o.tenant_id = tenant
$$;
REVOKE ALL ON FUNCTION fleet_quorum_met(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_quorum_met(text, text) TO fleet_api, fleet_execute;

-- The move to approved: one trigger for the quorum and the signatures (the separate
-- signature gate of 0045 goes; its constraint name stays, for the signature shortfall).
DROP TRIGGER operations_signed_approvals_gate ON operations;
DROP FUNCTION operations_signed_approvals_suffice();

CREATE OR REPLACE FUNCTION operations_approved_by_quorum() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    q record;
BEGIN
    SELECT * INTO q FROM fleet_quorum_count(NEW.operation_id, NEW.tenant_id);
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

-- The old count (0050) is replaced by fleet_quorum_count.
DROP FUNCTION fleet_approvals_counted(text, text, text, text);

-- An approval is recorded only by a live approver of the operation's tenant (besides
-- what 0040 asked: the stored hash of a pending, unstarted, unexpired operation, never
-- its submitter).
CREATE OR REPLACE FUNCTION approvals_of_a_pending_snapshot() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    op operations;
BEGIN
    SELECT * INTO op FROM operations WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id;
    IF NOT FOUND OR NEW.payload_hash <> op.payload_hash OR op.approval_status <> 'pending'
       OR op.status <> 'not_started' OR op.approval_expires_at <= now()
       OR NEW.principal IS NOT DISTINCT FROM op.submitted_by
       OR NEW.voided_at IS NOT NULL
       OR fleet_live_approver_since(NEW.principal, op.tenant_id) IS NULL THEN
        RAISE EXCEPTION 'approval of operation % by % refused: only a live approver of its tenant, other than the submitter, approves the stored hash of a pending, unstarted, unexpired operation',
                NEW.operation_id, NEW.principal
            USING ERRCODE = 'check_violation', TABLE = 'approvals',
                  CONSTRAINT = 'approvals_of_a_pending_snapshot';
    END IF;
    RETURN NEW;
END $$;

-- The approval status's moves (0040), plus one: approved → pending, for an unstarted
-- operation whose counted approvals no longer make its quorum (an approver was removed,
-- demoted or lost the tenant before execute claimed it). The approved hash and the
-- decider are cleared with it; nothing else may clear them.
CREATE OR REPLACE FUNCTION operations_approval_moves() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    becomes_approved boolean := NEW.approval_status = 'approved' AND OLD.approval_status <> 'approved';
    unapproved boolean := OLD.approval_status = 'approved' AND NEW.approval_status = 'pending';
    decided boolean := NEW.approval_status IS DISTINCT FROM OLD.approval_status;
BEGIN
    IF unapproved THEN
        IF OLD.status <> 'not_started' OR NEW.status <> 'not_started'
           OR NEW.approved_hash IS NOT NULL OR NEW.decided_by IS NOT NULL
           OR fleet_quorum_met(NEW.operation_id, NEW.tenant_id) THEN
            RAISE EXCEPTION 'operation %: approved → pending only for an unstarted operation whose live approvals no longer make its quorum',
                    OLD.operation_id
                USING ERRCODE = 'check_violation', TABLE = 'operations',
                      CONSTRAINT = 'operations_approval_transition';
        END IF;
        RETURN NEW;
    END IF;
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

-- The view (0050) shows the approvals that count now: a voided approval, or one by a
-- principal no longer a live approver of the tenant, is not among `approvals_received`.
-- Everything else it returns is unchanged.
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
        'approvals_received', (fleet_quorum_count(o.operation_id, o.tenant_id)).counted,
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

-- A history row `approval_voided` (reason: why) is published as the event
-- `fleet.operation.approval_voided`, so the agent and the approvers see the count drop
-- (and, where it was approved, the operation waiting again).
ALTER TABLE operation_outbox DROP CONSTRAINT operation_outbox_event_type_check;
ALTER TABLE operation_outbox ADD CONSTRAINT operation_outbox_event_type_check CHECK (event_type IN (
    'prepared', 'approval_recorded', 'approved', 'approval_voided', 'rejected', 'approval_expired',
    'superseded', 'executing', 'accepted', 'succeeded', 'failed', 'cancelled', 'unknown',
    'requeued', 'escalated', 'resolved', 'disputed'));

-- As 0048's, with approval_voided (`fleet_core::EventType::of`).
CREATE OR REPLACE FUNCTION outcome_event_type(kind text, to_status text, actor text, reason text)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN CASE
        WHEN kind = 'prepared' THEN 'prepared'
        WHEN kind = 'approval_recorded' THEN 'approval_recorded'
        WHEN kind = 'approved' THEN 'approved'
        WHEN kind = 'approval_voided' THEN 'approval_voided'
        WHEN kind = 'approval_expired' THEN 'approval_expired'
        WHEN kind = 'escalated' THEN 'escalated'
        WHEN kind = 'webhook_conflict' THEN
            CASE WHEN reason NOT IN ('webhook_on_disputed', 'operation_escalated') OR reason IS NULL THEN 'escalated' END
        WHEN kind <> 'transition' THEN NULL
        WHEN actor LIKE 'operator:%' THEN
            CASE WHEN to_status = 'disputed' THEN 'disputed' ELSE 'resolved' END
        WHEN to_status = 'in_progress' THEN 'executing'
        WHEN to_status = 'not_started' THEN 'requeued'
        WHEN to_status = 'accepted' THEN 'accepted'
        WHEN to_status = 'unknown' THEN 'unknown'
        WHEN to_status = 'succeeded' THEN 'succeeded'
        WHEN to_status = 'failed' THEN 'failed'
        WHEN to_status = 'disputed' THEN 'disputed'
        WHEN to_status = 'cancelled' THEN
            CASE reason
                WHEN 'approval_rejected' THEN 'rejected'
                WHEN 'approval_expired' THEN 'approval_expired'
                WHEN 'superseded' THEN 'superseded'
                ELSE 'cancelled'
            END
    END;
END $$;

-- Voids `p`'s approvals of the unstarted operations of `tenant` (NULL: of every tenant),
-- for `why`. Each operation affected gets one history row `approval_voided` (actor
-- `access`, the reason, the principal in its evidence); one that was approved and whose
-- remaining live approvals no longer make its quorum goes back to pending in the same
-- transaction. The operations are locked first, so an operation execute claims meanwhile
-- is either claimed before (then it has started, and its approvals are left as they are:
-- they are the record of what it ran on) or waits and is not claimed.
CREATE FUNCTION fleet_void_approvals(p text, tenant text, why text) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    o record;
    back_to_pending boolean;
    affected integer := 0;
BEGIN
    FOR o IN
        SELECT op.operation_id, op.tenant_id FROM operations op
        WHERE op.status = 'not_started'
          AND EXISTS (SELECT FROM approvals a
                      WHERE a.operation_id = op.operation_id AND a.tenant_id = op.tenant_id
                        AND a.principal = p AND a.voided_at IS NULL)
          AND (tenant IS NULL OR op.tenant_id = tenant)
        ORDER BY op.operation_id, op.tenant_id
        FOR NO KEY UPDATE OF op
    LOOP
        UPDATE approvals SET voided_at = now(), voided_reason = why
        WHERE operation_id = o.operation_id AND tenant_id = o.tenant_id AND principal = p
          AND voided_at IS NULL;
        WITH moved AS (
            UPDATE operations SET approval_status = 'pending', approved_hash = NULL, decided_by = NULL,
                decided_at = NULL, updated_at = now()
            WHERE operation_id = o.operation_id AND tenant_id = o.tenant_id
              AND approval_status = 'approved' AND status = 'not_started'
              AND NOT fleet_quorum_met(o.operation_id, o.tenant_id)
            RETURNING 1
        )
        SELECT EXISTS (SELECT FROM moved) INTO back_to_pending;
        INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, reason, evidence)
        SELECT operation_id, tenant_id, 'approval_voided', fence, 'access', why,
               jsonb_build_object('principal', p, 'back_to_pending', back_to_pending,
                                  'approvals_counted', (fleet_quorum_count(operation_id, tenant_id)).counted)
        FROM operations WHERE operation_id = o.operation_id AND tenant_id = o.tenant_id;
        affected := affected + 1;
    END LOOP;
    RETURN affected;
END $$;
REVOKE ALL ON FUNCTION fleet_void_approvals(text, text, text) FROM PUBLIC;

-- Revokes every live key of `p`, recording why as who removed it.
CREATE FUNCTION fleet_revoke_keys(p text, why text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    UPDATE approver_keys SET removed_at = now(), removed_by = why, removed_as = session_user
    WHERE principal = p AND removed_at IS NULL
$$;
REVOKE ALL ON FUNCTION fleet_revoke_keys(text, text) FROM PUBLIC;

-- A principal removed, or given another role: its keys are revoked and its approvals of
-- unstarted operations voided, whoever changed the row. A principal brought back (removed
-- → not removed) gets nothing back: its keys stay removed, its approvals void.
CREATE FUNCTION principals_stop_approving() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    why text;
BEGIN
    IF OLD.removed_at IS NULL AND NEW.removed_at IS NOT NULL THEN
        why := 'approver_removed';
    ELSIF NEW.role IS DISTINCT FROM OLD.role THEN
        why := 'approver_role_changed';
    ELSE
        RETURN NULL;
    END IF;
    PERFORM fleet_revoke_keys(NEW.name, why);
    PERFORM fleet_void_approvals(NEW.name, NULL, why);
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION principals_stop_approving() FROM PUBLIC;

CREATE TRIGGER principals_stop_approving
    AFTER UPDATE OF removed_at, role ON principals
    FOR EACH ROW EXECUTE FUNCTION principals_stop_approving();

-- A tenant withdrawn: the principal's approvals of that tenant's unstarted operations
-- are voided, and its keys revoked (a key is the person's, not the tenant's; a withdrawal
-- is a change of trust, so the approver registers a new key for what it keeps).
CREATE FUNCTION principal_tenants_withdrawn() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    PERFORM fleet_revoke_keys(OLD.principal, 'tenant_withdrawn');
    PERFORM fleet_void_approvals(OLD.principal, OLD.tenant_id, 'tenant_withdrawn');
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION principal_tenants_withdrawn() FROM PUBLIC;

CREATE TRIGGER principal_tenants_withdrawn
    AFTER DELETE ON principal_tenants
    FOR EACH ROW EXECUTE FUNCTION principal_tenants_withdrawn();

-- Whoever was removed or is no approver before this migration: keys revoked, approvals
-- of unstarted operations voided, as if the change happened now.
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT name, CASE WHEN removed_at IS NOT NULL THEN 'approver_removed'
                               ELSE 'approver_role_changed' END AS why
             FROM principals WHERE removed_at IS NOT NULL OR role <> 'approver' ORDER BY name LOOP
        PERFORM fleet_revoke_keys(p.name, p.why);
        PERFORM fleet_void_approvals(p.name, NULL, p.why);
    END LOOP;
END $$;
