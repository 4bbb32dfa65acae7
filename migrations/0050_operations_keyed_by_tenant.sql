-- Operations keyed by (tenant, id) (docs/design.md#tenant-boundaries).
--
-- Until now `operations.operation_id` was the primary key across tenants: an intent naming
-- an id another tenant had already used conflicted with that tenant's row and was refused
-- `operation_id_conflict` where a free id is stored, which told one tenant that another
-- holds the id. Here an operation is one tenant's (tenant_id, operation_id): the same id
-- in another tenant is simply another operation, stored like a free id.
--
-- * `operations` is keyed by the pair. The primary key keeps its name (`operations_pkey`,
--   which every compare-and-set plans on, see `shared/store/src/rows.rs`) and leads with
--   the id: ids are near-unique ULIDs, so the index is as selective as before, and the
--   execute worker's batch claim (`operation_id = ANY(…)`) is still answered by it.
-- * Every table that names an operation carries its tenant and references the pair:
--   `operation_events`, `attempts` and `approvals` (the signed ones included) by foreign
--   key; `operation_outbox` (whose published rows are pruned, so it holds no foreign key,
--   as before) and `webhook_events` (linked to its operation once matched) carry the pair.
--   Existing rows take their operation's tenant.
-- * The provider's idempotency key (also the reference a provider echoes) is unique
--   across the whole table: two operations, of one tenant or of two, never share a key at
--   a provider, where the second would replay the first's answer. Intake stores
--   `<tenant hash>.<id>` (`fleet_core::OperationId::idempotency_key`); rows stored before
--   keep the bare id they were sent with. The key is as immutable as the snapshot (0012).
-- * Every rule of 0039–0049 keeps holding, now per (tenant, id): the functions that read an
--   operation's approvals, history or row are replaced by ones that name both, and the
--   grants add the tenant column wherever the operation id column is written.

-- The foreign keys name the old primary key: dropped first, and made again below.
ALTER TABLE operation_events DROP CONSTRAINT operation_events_operation_id_fkey;
ALTER TABLE attempts DROP CONSTRAINT attempts_operation_id_fkey;
ALTER TABLE approvals DROP CONSTRAINT approvals_operation_id_fkey;

ALTER TABLE operations DROP CONSTRAINT operations_pkey;
ALTER TABLE operations ADD CONSTRAINT operations_pkey PRIMARY KEY (operation_id, tenant_id);
CREATE UNIQUE INDEX operations_idempotency_key ON operations (idempotency_key);

-- The tenant of every existing child row is its operation's. History and approvals refuse
-- UPDATE by trigger (they are evidence); filling a new column that restates what the
-- foreign key already said changes no evidence, so those triggers are off for this one
-- statement each, inside this migration's transaction.
ALTER TABLE operation_events ADD COLUMN tenant_id text;
ALTER TABLE operation_events DISABLE TRIGGER operation_events_append_only;
UPDATE operation_events e SET tenant_id = o.tenant_id FROM operations o WHERE o.operation_id = e.operation_id;
ALTER TABLE operation_events ENABLE TRIGGER operation_events_append_only;
ALTER TABLE operation_events ALTER COLUMN tenant_id SET NOT NULL,
    ADD CONSTRAINT operation_events_operation_fkey FOREIGN KEY (operation_id, tenant_id)
        REFERENCES operations (operation_id, tenant_id);
DROP INDEX operation_events_by_operation;
CREATE INDEX operation_events_by_operation ON operation_events (operation_id, tenant_id, id);

ALTER TABLE attempts ADD COLUMN tenant_id text;
UPDATE attempts a SET tenant_id = o.tenant_id FROM operations o WHERE o.operation_id = a.operation_id;
ALTER TABLE attempts ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT attempts_pkey,
    ADD CONSTRAINT attempts_pkey PRIMARY KEY (operation_id, tenant_id, fence),
    ADD CONSTRAINT attempts_operation_fkey FOREIGN KEY (operation_id, tenant_id)
        REFERENCES operations (operation_id, tenant_id);

ALTER TABLE approvals ADD COLUMN tenant_id text;
ALTER TABLE approvals DISABLE TRIGGER approvals_append_only;
UPDATE approvals a SET tenant_id = o.tenant_id FROM operations o WHERE o.operation_id = a.operation_id;
ALTER TABLE approvals ENABLE TRIGGER approvals_append_only;
ALTER TABLE approvals ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT approvals_pkey,
    ADD CONSTRAINT approvals_pkey PRIMARY KEY (operation_id, tenant_id, principal),
    ADD CONSTRAINT approvals_operation_fkey FOREIGN KEY (operation_id, tenant_id)
        REFERENCES operations (operation_id, tenant_id);

-- The outbox already carried the tenant (for routing keys); its per-operation sequence is
-- now per (operation, tenant). An event's id was `<operation id>.<sequence>`, which two
-- tenants' operations with one id would share (and a consumer deduplicating on it would
-- drop one): it is now `<operation key>.<sequence>`, the key being the operation's stored
-- idempotency key, so an operation stored before keeps the ids its events always had.
ALTER TABLE operation_outbox DROP CONSTRAINT operation_outbox_sequence,
    ADD CONSTRAINT operation_outbox_sequence UNIQUE (operation_id, tenant_id, sequence),
    ADD COLUMN event_key text;
UPDATE operation_outbox x SET event_key = o.idempotency_key
FROM operations o WHERE o.operation_id = x.operation_id AND o.tenant_id = x.tenant_id;
ALTER TABLE operation_outbox ALTER COLUMN event_key SET NOT NULL;

-- A provider event is linked to one operation: both halves of its key, or neither.
ALTER TABLE webhook_events ADD COLUMN tenant_id text;
UPDATE webhook_events w SET tenant_id = o.tenant_id FROM operations o WHERE o.operation_id = w.operation_id;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_linked_to_one_operation
    CHECK ((operation_id IS NULL) = (tenant_id IS NULL));
DROP INDEX webhook_events_by_operation;
CREATE INDEX webhook_events_by_operation ON webhook_events (operation_id, tenant_id)
    WHERE operation_id IS NOT NULL;

-- The rules of 0040 and 0045, per (tenant, id). The old functions go: a caller of one
-- would count another tenant's approvals of an operation with the same id.
DROP FUNCTION fleet_approval_recorded(text, text);

CREATE FUNCTION fleet_approvals_counted(op text, tenant text, hash text, submitter text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM approvals
    WHERE operation_id = op AND tenant_id = tenant AND payload_hash = hash
      AND principal IS DISTINCT FROM submitter
$$;

CREATE OR REPLACE FUNCTION operations_approved_by_quorum() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> 'not_started' OR NEW.approval_expires_at <= now()
       OR fleet_approvals_counted(NEW.operation_id, NEW.tenant_id, NEW.payload_hash, NEW.submitted_by)
          < NEW.approvals_required THEN
        RAISE EXCEPTION 'operation % cannot be approved: % of % distinct approvals of its snapshot are recorded',
                NEW.operation_id,
                fleet_approvals_counted(NEW.operation_id, NEW.tenant_id, NEW.payload_hash, NEW.submitted_by),
                NEW.approvals_required
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_approved_by_quorum';
    END IF;
    RETURN NULL;
END $$;
DROP FUNCTION fleet_approvals_counted(text, text, text);

CREATE OR REPLACE FUNCTION approvals_of_a_pending_snapshot() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    op operations;
BEGIN
    SELECT * INTO op FROM operations WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id;
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

CREATE FUNCTION fleet_approval_recorded(op text, tenant text, p text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT FROM approvals a JOIN operations o USING (operation_id, tenant_id)
                   WHERE a.operation_id = op AND a.tenant_id = tenant AND a.principal = p
                     AND a.payload_hash = o.payload_hash)
$$;

CREATE OR REPLACE FUNCTION operation_events_author_is_allowed() RETURNS trigger LANGUAGE plpgsql AS $$
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
                AND fleet_approval_recorded(NEW.operation_id, NEW.tenant_id, person))
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

CREATE OR REPLACE FUNCTION operations_signed_approvals_suffice() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    signed bigint;
BEGIN
    IF NEW.signatures_required = 0 THEN
        RETURN NULL;
    END IF;
    SELECT count(DISTINCT a.principal) INTO signed
    FROM approvals a JOIN approver_keys k ON k.key_id = a.key_id
    WHERE a.operation_id = NEW.operation_id AND a.tenant_id = NEW.tenant_id
      AND a.payload_hash = NEW.payload_hash
      AND a.signature IS NOT NULL AND k.principal = a.principal
      AND k.registered_at < a.at AND k.removed_at IS NULL;
    IF signed < NEW.signatures_required THEN
        RAISE EXCEPTION 'operation % needs % signed approvals of its hash to be approved; it has %',
                        NEW.operation_id, NEW.signatures_required, signed
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_signed_approvals_check';
    END IF;
    RETURN NULL;
END $$;

-- Approval expiry (0015), for one operation of one tenant.
DROP FUNCTION fleet_expire_approval(text);
CREATE FUNCTION fleet_expire_approval(op text, tenant text) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH expired AS (
        UPDATE operations SET approval_status = 'expired', updated_at = now()
        WHERE operation_id = op AND tenant_id = tenant AND approval_status = 'pending'
          AND approval_expires_at <= now() AND status = 'cancelled'
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM expired)
$$;
REVOKE ALL ON FUNCTION fleet_expire_approval(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_expire_approval(text, text) TO fleet_reconcile;

-- Outcome events (0009, 0048): numbered and written per (tenant, id).
CREATE OR REPLACE FUNCTION operation_events_number() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    PERFORM 1 FROM operations WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id
        FOR NO KEY UPDATE;
    NEW.event_sequence := 1 + COALESCE(
        (SELECT max(e.event_sequence) FROM operation_events e
         WHERE e.operation_id = NEW.operation_id AND e.tenant_id = NEW.tenant_id), 0);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION operation_events_to_outbox() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    event_type text := outcome_event_type(NEW.kind, NEW.to_status, NEW.actor, NEW.reason);
    op operations;
    extra jsonb := jsonb_build_object('sequence', NEW.event_sequence);
    approver text;
BEGIN
    SELECT * INTO STRICT op FROM operations
    WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id;
    IF event_type = 'unknown' AND op.escalated_at IS NOT NULL THEN
        event_type := 'escalated';
    END IF;
    IF event_type IN ('approval_recorded', 'approved') AND NEW.actor LIKE 'approver:%' THEN
        approver := substr(NEW.actor, length('approver:') + 1);
        extra := extra || jsonb_build_object('approval', jsonb_build_object(
            'by', approver,
            'signed', EXISTS (SELECT FROM approvals a
                              WHERE a.operation_id = op.operation_id AND a.tenant_id = op.tenant_id
                                AND a.principal = approver
                                AND a.payload_hash = op.payload_hash AND a.signature IS NOT NULL),
            'signed_in_with', NEW.signed_in_with));
    END IF;
    INSERT INTO operation_outbox (operation_id, event_key, sequence, event_type, tenant_id, history_id,
                                  occurred_at, data)
    VALUES (op.operation_id, op.idempotency_key, NEW.event_sequence, event_type, op.tenant_id, NEW.id,
            NEW.at, operation_view(op) || extra);
    RETURN NULL;
END
$$;

-- The view (0049) counts the approvals of this tenant's operation only.
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
                               WHERE a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
                                 AND a.payload_hash = o.payload_hash),
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

-- A writer that names only the operation's id in a child row (one of a version from before
-- this migration, still running during a rolling upgrade; a script) gets the tenant of the
-- one operation with that id. When two tenants hold the id nothing is guessed: the tenant
-- stays NULL and the row is refused (23502). Every component of this version names the
-- tenant itself, and the WHEN clause keeps this off its path. The trigger names sort
-- before every other BEFORE INSERT trigger of these tables, which read the tenant.
CREATE FUNCTION fleet_tenant_of_only_operation() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    tenants text[];
BEGIN
    tenants := ARRAY(SELECT tenant_id FROM operations WHERE operation_id = NEW.operation_id LIMIT 2);
    IF cardinality(tenants) = 1 THEN
        NEW.tenant_id := tenants[1];
    END IF;
    RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION fleet_tenant_of_only_operation() FROM PUBLIC;

CREATE TRIGGER operation_events_0_tenant BEFORE INSERT ON operation_events
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION fleet_tenant_of_only_operation();
CREATE TRIGGER attempts_0_tenant BEFORE INSERT ON attempts
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION fleet_tenant_of_only_operation();
CREATE TRIGGER approvals_0_tenant BEFORE INSERT ON approvals
    FOR EACH ROW WHEN (NEW.tenant_id IS NULL) EXECUTE FUNCTION fleet_tenant_of_only_operation();

-- Grants (0039, 0045): whoever writes an operation's id in a child row writes its tenant.
GRANT INSERT (tenant_id) ON operation_events
    TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest;
GRANT INSERT (tenant_id) ON attempts TO fleet_execute;
GRANT INSERT (tenant_id) ON approvals TO fleet_api;
GRANT UPDATE (tenant_id) ON webhook_events TO fleet_webhook_ingest, fleet_reconcile;
