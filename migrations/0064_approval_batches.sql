-- Batch approval: one person approves a set of pending operations in one decision, with
-- one signature over the statement `fleet.approval_batch.v1` (`fleet_core::batch_approval`):
-- the list of the operations with their payload hashes, their count, and the sum of their
-- amounts per currency. The database counts that one signature as one approval for each
-- listed operation and for no other:
--
-- * `approval_batches` keeps each batch as signed; no component role writes it (42501):
--   `fleet_record_batch`, with the owner's rights, is the one way in (the API's, after it
--   verified the signature with the approver's registered key).
-- * `fleet_record_batch` refuses the whole batch (23514, constraint
--   `approval_batches_list_what_was_signed`) unless the principal is a live approver of the
--   tenant, the key is its live key, every listed operation is the tenant's, pending,
--   unstarted, unexpired, of the listed hash, not submitted by the principal and needing no
--   signed approval, no operation is listed twice, and the count and the sums per currency
--   are those of the listed operations; then it records one approval per listed operation
--   (`approvals.batch_id`), and approves each whose quorum that completes, as an approval
--   over the API does (history `approved` or `approval_recorded`, by the approver).
-- * An approvals row naming a batch is refused unless the batch lists its operation and
--   hash and is the same principal's (`approvals_of_their_batch`), whoever inserts it.
--
-- The approvals a batch records carry no per-operation signature: they count towards the
-- quorum as unsigned approvals, which is why an operation whose policy asks for signed
-- approvals is never in a batch.

CREATE TABLE approval_batches (
    batch_id     text PRIMARY KEY CHECK (batch_id ~ '^ab_[0-9A-HJKMNP-TV-Z]{26}$'),
    tenant_id    text NOT NULL,
    principal    text NOT NULL REFERENCES principals (name),
    statement    jsonb NOT NULL,
    batch_hash   text NOT NULL CHECK (batch_hash ~ '^sha256:[0-9a-f]{64}$'),
    key_id       text NOT NULL REFERENCES approver_keys (key_id),
    signature    bytea NOT NULL,
    expires_at   timestamptz NOT NULL,
    at           timestamptz NOT NULL DEFAULT now()
);

CREATE TRIGGER approval_batches_append_only BEFORE UPDATE OR DELETE ON approval_batches
    FOR EACH ROW EXECUTE FUNCTION operation_events_are_append_only();

ALTER TABLE approvals ADD COLUMN batch_id text REFERENCES approval_batches (batch_id);

-- The void (0055) may change nothing else, the batch included.
CREATE OR REPLACE FUNCTION approvals_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.voided_at IS NULL AND NEW.voided_at IS NOT NULL
       AND (NEW.operation_id, NEW.tenant_id, NEW.principal, NEW.signed_in_with, NEW.payload_hash,
            NEW.at, NEW.key_id, NEW.signature, NEW.signed_expires_at, NEW.batch_id)
           IS NOT DISTINCT FROM
           (OLD.operation_id, OLD.tenant_id, OLD.principal, OLD.signed_in_with, OLD.payload_hash,
            OLD.at, OLD.key_id, OLD.signature, OLD.signed_expires_at, OLD.batch_id) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'approvals is append-only (% refused); an approval is only ever voided, once', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

-- An approval naming a batch is one of the batch's: its operation and hash are listed,
-- the principal and tenant are the batch's, and the batch is unexpired.
CREATE FUNCTION approvals_of_their_batch() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (
        SELECT FROM approval_batches b
        WHERE b.batch_id = NEW.batch_id AND b.principal = NEW.principal AND b.tenant_id = NEW.tenant_id
          AND b.expires_at > now()
          AND EXISTS (SELECT FROM jsonb_array_elements(b.statement -> 'operations') i
                      WHERE i ->> 'operation_id' = NEW.operation_id
                        AND i ->> 'payload_hash' = NEW.payload_hash)) THEN
        RAISE EXCEPTION 'approval of % refused: batch % does not list it for %', NEW.operation_id, NEW.batch_id, NEW.principal
            USING ERRCODE = 'check_violation', TABLE = 'approvals', CONSTRAINT = 'approvals_of_their_batch';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER approvals_of_their_batch BEFORE INSERT ON approvals
    FOR EACH ROW WHEN (NEW.batch_id IS NOT NULL) EXECUTE FUNCTION approvals_of_their_batch();

-- Records a batch the API verified (its signature over the statement's canonical bytes,
-- with `key`, the principal's). Returns each listed operation with whether this batch's
-- approval completed its quorum.
CREATE FUNCTION fleet_record_batch(st jsonb, hash text, p text, key text, sig bytea, via text)
RETURNS TABLE (operation_id text, tenant_id text, approved boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    tenant text := st ->> 'tenant_id';
    batch text := st ->> 'batch_id';
    expires timestamptz := (st ->> 'expires_at')::timestamptz;
    item record;
    o operations;
    listed integer := 0;
    sums jsonb := '{}'::jsonb;
    refused text;
    q record;
    moved boolean;
BEGIN
    IF st ->> 'statement' IS DISTINCT FROM 'fleet.approval_batch.v1' THEN
        refused := 'not a fleet.approval_batch.v1 statement';
    ELSIF fleet_live_approver_since(p, tenant) IS NULL THEN
        refused := 'the principal is no live approver of the tenant';
    ELSIF NOT EXISTS (SELECT FROM approver_keys k WHERE k.key_id = key AND k.principal = p
                      AND k.removed_at IS NULL AND k.registered_at < now()) THEN
        refused := 'the key is not a live key of the principal';
    ELSIF expires <= now() THEN
        refused := 'the statement has expired';
    ELSIF jsonb_typeof(st -> 'operations') <> 'array' OR jsonb_array_length(st -> 'operations') = 0 THEN
        refused := 'the statement lists no operation';
    END IF;
    IF refused IS NULL THEN
        INSERT INTO approval_batches (batch_id, tenant_id, principal, statement, batch_hash, key_id, signature, expires_at)
        VALUES (batch, tenant, p, st, hash, key, sig, expires);
        FOR item IN
            SELECT i ->> 'operation_id' AS op, i ->> 'payload_hash' AS h
            FROM jsonb_array_elements(st -> 'operations') i ORDER BY 1
        LOOP
            SELECT * INTO o FROM operations x
            WHERE x.operation_id = item.op AND x.tenant_id = tenant FOR NO KEY UPDATE;
            IF NOT FOUND OR o.payload_hash <> item.h OR o.approval_status <> 'pending'
               OR o.status <> 'not_started' OR o.approval_expires_at <= now()
               OR o.submitted_by IS NOT DISTINCT FROM p OR o.signatures_required > 0 THEN
                refused := format('%s is not a pending operation of the tenant with that hash that this principal may approve unsigned', item.op);
                EXIT;
            END IF;
            listed := listed + 1;
            IF jsonb_typeof(o.payload -> 'amount_minor') = 'number' AND jsonb_typeof(o.payload -> 'currency') = 'string' THEN
                sums := jsonb_set(sums, ARRAY[o.payload ->> 'currency'],
                                  to_jsonb(COALESCE((sums ->> (o.payload ->> 'currency'))::numeric, 0)
                                           + (o.payload ->> 'amount_minor')::numeric));
            END IF;
        END LOOP;
    END IF;
    IF refused IS NULL AND (listed <> jsonb_array_length(st -> 'operations')
                            OR (st ->> 'count')::integer IS DISTINCT FROM listed
                            OR (SELECT count(DISTINCT i ->> 'operation_id') FROM jsonb_array_elements(st -> 'operations') i) <> listed
                            OR (st -> 'totals') IS DISTINCT FROM sums) THEN
        refused := 'the count or the totals are not those of the listed operations';
    END IF;
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION 'batch refused: %', refused
            USING ERRCODE = 'check_violation', TABLE = 'approval_batches',
                  CONSTRAINT = 'approval_batches_list_what_was_signed';
    END IF;
    FOR item IN
        SELECT i ->> 'operation_id' AS op, i ->> 'payload_hash' AS h
        FROM jsonb_array_elements(st -> 'operations') i ORDER BY 1
    LOOP
        INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, batch_id)
        VALUES (item.op, tenant, p, via, item.h, batch)
        ON CONFLICT DO NOTHING;
        SELECT * INTO q FROM fleet_quorum_count(item.op, tenant);
        WITH m AS (
            UPDATE operations x SET approval_status = 'approved', approved_hash = x.payload_hash,
                decided_by = p, decided_at = now(), updated_at = now()
            WHERE x.operation_id = item.op AND x.tenant_id = tenant AND x.approval_status = 'pending'
              AND x.approvals_required <= q.counted AND x.signatures_required <= q.signed
            RETURNING 1)
        SELECT EXISTS (SELECT FROM m) INTO moved;
        INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, evidence, signed_in_with)
        SELECT x.operation_id, x.tenant_id, CASE WHEN moved THEN 'approved' ELSE 'approval_recorded' END,
               x.fence, 'approver:' || p,
               jsonb_build_object('approved_hash', item.h, 'approvals_received', q.counted, 'batch_id', batch),
               via
        FROM operations x WHERE x.operation_id = item.op AND x.tenant_id = tenant;
        operation_id := item.op;
        tenant_id := tenant;
        approved := moved;
        RETURN NEXT;
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION fleet_record_batch(jsonb, text, text, text, bytea, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_record_batch(jsonb, text, text, text, bytea, text) TO fleet_api;
REVOKE ALL ON approval_batches FROM PUBLIC;
GRANT SELECT ON approval_batches TO fleet_api, fleet_execute;
