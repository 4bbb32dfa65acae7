-- Signed batches, and what an agent may ask of mandates.
--
-- A batch approval (0064) is signed once, with the approver's registered key, over the
-- `fleet.approval_batch.v1` statement; from here on it counts as a signed approval of each
-- operation it lists:
--
-- * `fleet_record_batch` records each listed operation's approval with the batch's key,
--   signature and expiry (`approvals.key_id`, `signature`, `signed_expires_at`), so the
--   quorum rule (`fleet_quorum_count`, 0055) counts it as signed exactly as it counts a
--   per-operation signature: by a key registered for that approver before the approval,
--   and not removed. An operation whose policy asks for signed approvals may now be in a
--   batch.
-- * An approvals row naming a batch must carry that batch's own key, signature and
--   expiry (`approvals_of_their_batch`), whoever inserts it: a batch's signature is never
--   borrowed for another statement.
-- * The database cannot verify a signature. fleet-execute does, before the call
--   (`fleet_core::batch_approval::count_signed_with_batches`): over the canonical bytes of
--   the batch's statement as stored, which must list the operation with its stored hash;
--   a batch whose signature does not verify, or whose key was removed since, counts for
--   nothing.
--
-- `fleet_mandate_rule` gives the API the policy rule in force for a tenant and action
-- (one action's entry of `policies.rules`), which no component role reads itself: what
-- an agent's "am I covered?" is judged against, by the same reading as
-- `fleet_mandate_may_approve`.

CREATE OR REPLACE FUNCTION approvals_of_their_batch() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (
        SELECT FROM approval_batches b
        WHERE b.batch_id = NEW.batch_id AND b.principal = NEW.principal AND b.tenant_id = NEW.tenant_id
          AND b.expires_at > now()
          AND (NEW.key_id, NEW.signature, NEW.signed_expires_at) IS NOT DISTINCT FROM (b.key_id, b.signature, b.expires_at)
          AND EXISTS (SELECT FROM jsonb_array_elements(b.statement -> 'operations') i
                      WHERE i ->> 'operation_id' = NEW.operation_id
                        AND i ->> 'payload_hash' = NEW.payload_hash)) THEN
        RAISE EXCEPTION 'approval of % refused: batch % does not list it for %, with its own signature', NEW.operation_id, NEW.batch_id, NEW.principal
            USING ERRCODE = 'check_violation', TABLE = 'approvals', CONSTRAINT = 'approvals_of_their_batch';
    END IF;
    RETURN NEW;
END $$;

-- Records a batch the API verified (its signature over the statement's canonical bytes,
-- with `key`, the principal's): one approval per listed operation, signed by the batch.
-- Returns each listed operation with whether this batch's approval completed its quorum.
CREATE OR REPLACE FUNCTION fleet_record_batch(st jsonb, hash text, p text, key text, sig bytea, via text)
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
               OR o.submitted_by IS NOT DISTINCT FROM p THEN
                refused := format('%s is not a pending operation of the tenant with that hash that this principal may approve', item.op);
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
        INSERT INTO approvals (operation_id, tenant_id, principal, signed_in_with, payload_hash, batch_id,
                               key_id, signature, signed_expires_at)
        VALUES (item.op, tenant, p, via, item.h, batch, key, sig, expires)
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

CREATE FUNCTION fleet_mandate_rule(tenant text, act text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT p.rules -> act FROM policies p WHERE p.policy_version = fleet_policy_in_force(tenant, act)
$$;
REVOKE ALL ON FUNCTION fleet_mandate_rule(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_mandate_rule(text, text) TO fleet_api;
