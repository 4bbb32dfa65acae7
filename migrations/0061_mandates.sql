-- Standing mandates: a signed, bounded, revocable permission that approves routine
-- operations at claim; and the revocation of one approval of an operation not yet claimed.
--
-- A mandate is one approver's signed statement (`fleet_core::mandate`, RFC 8785 canonical
-- JSON, signed with the same registered keys as approvals): the tenant, the actions, the
-- payees it may pay (ids with the account fingerprints the signer saw) or any payee the
-- directory verified, the currency, the most one operation may be, the total budget, the
-- most operations it may approve, the window it is valid in, and optionally the principal
-- whose intents it covers. What the database keeps, whoever connects:
--
-- * `mandates` is written only by functions with the owner's rights: no component role
--   holds INSERT, UPDATE or DELETE on it (42501). `fleet_mandate_create` (the API's, after
--   it verified the signature) stores the statement and derives every limit from the
--   signed statement itself, so a limit is never a column someone could set apart from
--   what was signed; the signer must be a live approver of the tenant and the key theirs,
--   registered before and not removed. Only the counters (`spent_minor`, `used_count`) and
--   the revocation change afterwards (23000 otherwise), and the counters stay within the
--   signed limits (CHECK, 23514).
-- * The consumption (`fleet_mandate_approve`, execute's, in the transaction of its claim):
--   an unstarted operation whose approval is pending, inside an active mandate and of a
--   kind its policy lets a mandate approve (`mandates = "below_bands"`: a quorum of one,
--   an amount below every band of its currency, no risk cue), is approved by the mandate.
--   The budget and the count are taken by one conditional UPDATE of the mandate's row
--   (`spent_minor + amount <= budget_minor AND used_count < count_limit`, re-checked on the
--   newest row version after a wait for the row's lock), so two claims racing on the last
--   euro pay at most the budget. The history row `approved` is by `mandate:<id>` with the
--   mandate's id, amount and what is left in its evidence; `decided_by` names it too.
-- * The claim (`shared/store/src/claim.rs`) claims an operation approved by a mandate only
--   while that mandate is not revoked (`fleet_mandate_holds`).
-- * `fleet_mandate_revoke` (signer or admin): the mandate approves nothing more from the
--   commit on; operations it approved that no claim took yet go back to pending with an
--   `approval_voided` history row (reason `mandate_revoked`), their amounts given back, so
--   what is left of the budget shows as revoked, not spent.
-- * `fleet_approval_revoke` (signer or admin): one approval of an unstarted operation is
--   voided (`approval_revoked`); an operation it no longer makes approved goes back to
--   pending; the claim counts only live approvals, so it is never claimed on it.

CREATE TABLE mandates (
    mandate_id      text PRIMARY KEY CHECK (mandate_id ~ '^md_[0-9A-HJKMNP-TV-Z]{26}$'),
    tenant_id       text NOT NULL CHECK (length(tenant_id) BETWEEN 1 AND 256),
    actions         text[] NOT NULL CHECK (cardinality(actions) BETWEEN 1 AND 8),
    -- NULL: any payee the provider's directory verified; otherwise {payee id: fingerprint}.
    payees          jsonb CHECK (payees IS NULL OR jsonb_typeof(payees) = 'object'),
    currency        text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    per_operation_max_minor bigint NOT NULL CHECK (per_operation_max_minor > 0),
    budget_minor    bigint NOT NULL CHECK (budget_minor > 0),
    count_limit     integer NOT NULL CHECK (count_limit > 0),
    valid_from      timestamptz NOT NULL,
    valid_until     timestamptz NOT NULL,
    for_principal   text,
    -- What was signed, as signed (the limits above are read from it), and its hash.
    statement       jsonb NOT NULL,
    mandate_hash    text NOT NULL CHECK (mandate_hash ~ '^sha256:[0-9a-f]{64}$'),
    signed_by       text NOT NULL REFERENCES principals (name),
    key_id          text NOT NULL REFERENCES approver_keys (key_id),
    signature       bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    spent_minor     bigint NOT NULL DEFAULT 0,
    used_count      integer NOT NULL DEFAULT 0,
    revoked_at      timestamptz,
    revoked_by      text,
    CONSTRAINT mandates_window CHECK (valid_until > valid_from),
    CONSTRAINT mandates_within_budget CHECK (spent_minor BETWEEN 0 AND budget_minor),
    CONSTRAINT mandates_within_count CHECK (used_count BETWEEN 0 AND count_limit),
    CONSTRAINT mandates_revocation_recorded CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
CREATE INDEX mandates_of_tenant ON mandates (tenant_id) WHERE revoked_at IS NULL;

-- Which operation a mandate approved, for how much. A use given back (its operation went
-- back to pending when the mandate was revoked before any claim) keeps its row.
CREATE TABLE mandate_uses (
    operation_id  text NOT NULL,
    tenant_id     text NOT NULL,
    mandate_id    text NOT NULL REFERENCES mandates (mandate_id),
    amount_minor  bigint NOT NULL CHECK (amount_minor > 0),
    at            timestamptz NOT NULL DEFAULT now(),
    released_at   timestamptz,
    FOREIGN KEY (operation_id, tenant_id) REFERENCES operations (operation_id, tenant_id)
);
CREATE UNIQUE INDEX mandate_uses_one_live_per_operation ON mandate_uses (operation_id, tenant_id)
    WHERE released_at IS NULL;
CREATE INDEX mandate_uses_of_mandate ON mandate_uses (mandate_id);

-- What happened to a mandate: created, revoked (by whom).
CREATE TABLE mandate_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    mandate_id  text NOT NULL REFERENCES mandates (mandate_id),
    kind        text NOT NULL CHECK (kind IN ('created', 'revoked')),
    actor       text NOT NULL,
    evidence    jsonb,
    db_user     text NOT NULL DEFAULT session_user,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mandate_events_of_mandate ON mandate_events (mandate_id, id);

-- Nothing but the counters and the revocation ever changes; nothing is removed.
CREATE FUNCTION mandates_keep_what_was_signed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND (NEW.mandate_id, NEW.tenant_id, NEW.actions, NEW.payees, NEW.currency,
            NEW.per_operation_max_minor, NEW.budget_minor, NEW.count_limit, NEW.valid_from,
            NEW.valid_until, NEW.for_principal, NEW.statement, NEW.mandate_hash, NEW.signed_by,
            NEW.key_id, NEW.signature, NEW.created_at)
           IS NOT DISTINCT FROM
           (OLD.mandate_id, OLD.tenant_id, OLD.actions, OLD.payees, OLD.currency,
            OLD.per_operation_max_minor, OLD.budget_minor, OLD.count_limit, OLD.valid_from,
            OLD.valid_until, OLD.for_principal, OLD.statement, OLD.mandate_hash, OLD.signed_by,
            OLD.key_id, OLD.signature, OLD.created_at)
       AND (OLD.revoked_at IS NULL OR (NEW.revoked_at, NEW.revoked_by) IS NOT DISTINCT FROM (OLD.revoked_at, OLD.revoked_by)) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'mandates keep what was signed (% refused): only the counters and a revocation change', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER mandates_keep_what_was_signed BEFORE UPDATE OR DELETE ON mandates
    FOR EACH ROW EXECUTE FUNCTION mandates_keep_what_was_signed();

CREATE FUNCTION mandate_rows_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'mandate_uses' AND TG_OP = 'UPDATE' AND OLD.released_at IS NULL
       AND NEW.released_at IS NOT NULL
       AND (NEW.operation_id, NEW.tenant_id, NEW.mandate_id, NEW.amount_minor, NEW.at)
           IS NOT DISTINCT FROM (OLD.operation_id, OLD.tenant_id, OLD.mandate_id, OLD.amount_minor, OLD.at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is append-only (% refused)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER mandate_uses_append_only BEFORE UPDATE OR DELETE ON mandate_uses
    FOR EACH ROW EXECUTE FUNCTION mandate_rows_are_append_only();
CREATE TRIGGER mandate_events_append_only BEFORE UPDATE OR DELETE ON mandate_events
    FOR EACH ROW EXECUTE FUNCTION mandate_rows_are_append_only();

-- Stores a signed mandate. The caller (the API) verified the signature over the
-- statement's canonical bytes and computed `hash` from them; here every limit is read from
-- the statement, and the signer and key are checked as an approval's are.
CREATE FUNCTION fleet_mandate_create(st jsonb, hash text, signer text, key text, sig bytea)
RETURNS mandates LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m mandates;
    payees jsonb;
    refused text;
BEGIN
    IF st ->> 'statement' IS DISTINCT FROM 'fleet.mandate.v1' THEN
        refused := 'not a fleet.mandate.v1 statement';
    ELSIF fleet_live_approver_since(signer, st ->> 'tenant_id') IS NULL THEN
        refused := 'the signer is no live approver of the tenant';
    ELSIF NOT EXISTS (SELECT FROM approver_keys k WHERE k.key_id = key AND k.principal = signer
                      AND k.removed_at IS NULL AND k.registered_at < now()) THEN
        refused := 'the key is not a live key of the signer';
    ELSIF jsonb_typeof(st -> 'actions') <> 'array' OR jsonb_typeof(st -> 'budget_minor') <> 'number'
          OR jsonb_typeof(st -> 'per_operation_max_minor') <> 'number'
          OR jsonb_typeof(st -> 'count_limit') <> 'number' THEN
        refused := 'the statement lacks its limits';
    ELSIF (st ->> 'valid_until')::timestamptz <= now() THEN
        refused := 'the mandate has expired';
    ELSIF (st ->> 'for_principal') IS NOT DISTINCT FROM signer THEN
        refused := 'a mandate is never for its signer';
    END IF;
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION 'mandate refused: %', refused
            USING ERRCODE = 'check_violation', TABLE = 'mandates', CONSTRAINT = 'mandates_signed_by_a_live_approver';
    END IF;
    IF jsonb_typeof(st -> 'payees') = 'array' THEN
        SELECT jsonb_object_agg(p ->> 'id', p ->> 'account_fingerprint') INTO payees
        FROM jsonb_array_elements(st -> 'payees') p;
    END IF;
    INSERT INTO mandates (mandate_id, tenant_id, actions, payees, currency, per_operation_max_minor,
                          budget_minor, count_limit, valid_from, valid_until, for_principal,
                          statement, mandate_hash, signed_by, key_id, signature)
    VALUES (st ->> 'mandate_id', st ->> 'tenant_id',
            ARRAY(SELECT jsonb_array_elements_text(st -> 'actions')), payees, st ->> 'currency',
            (st ->> 'per_operation_max_minor')::bigint, (st ->> 'budget_minor')::bigint,
            (st ->> 'count_limit')::integer, (st ->> 'valid_from')::timestamptz,
            (st ->> 'valid_until')::timestamptz, st ->> 'for_principal', st, hash, signer, key, sig)
    RETURNING * INTO m;
    INSERT INTO mandate_events (mandate_id, kind, actor, evidence)
    VALUES (m.mandate_id, 'created', 'approver:' || signer,
            jsonb_build_object('mandate_hash', hash, 'key_id', key));
    RETURN m;
END $$;
REVOKE ALL ON FUNCTION fleet_mandate_create(jsonb, text, text, text, bytea) FROM PUBLIC;

-- Whether the operation's policy lets a mandate approve it at all: the action says
-- `mandates = "below_bands"`, the operation needs one approval (no more than its amount's
-- quorum below every band asks: no unknown payee or foreign object raised it), its amount
-- is below every band of its currency, and no risk cue was recorded.
CREATE FUNCTION fleet_mandate_may_approve(o operations) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    q jsonb := (SELECT rules -> o.action FROM policies WHERE policy_version = o.policy_version);
    lowest numeric;
BEGIN
    IF q IS NULL OR q ->> 'mandates' IS DISTINCT FROM 'below_bands'
       OR o.approvals_required <> 1 OR (q ->> 'approvers')::integer <> 1
       OR (jsonb_typeof(o.risk) = 'array' AND jsonb_array_length(o.risk) > 0)
       OR jsonb_typeof(o.payload -> 'amount_minor') <> 'number'
       OR jsonb_typeof(o.payload -> 'currency') <> 'string' THEN
        RETURN false;
    END IF;
    IF q -> 'bands' <> '{}'::jsonb THEN
        SELECT min((b ->> 'from_amount_minor')::numeric) INTO lowest
        FROM jsonb_array_elements(q -> 'bands' -> (o.payload ->> 'currency')) b;
        IF lowest IS NULL OR (o.payload ->> 'amount_minor')::numeric >= lowest THEN
            RETURN false;
        END IF;
    END IF;
    RETURN true;
END $$;
REVOKE ALL ON FUNCTION fleet_mandate_may_approve(operations) FROM PUBLIC;

-- Whether mandate `m` covers operation `o` by what was signed (its limits on the budget,
-- the count and the window are the consumption's to judge, on the row as it is then).
CREATE FUNCTION fleet_mandate_covers(m mandates, o operations) RETURNS boolean
LANGUAGE sql STABLE SET search_path = public, pg_temp AS $$
    SELECT m.tenant_id = o.tenant_id
       AND o.action = ANY (m.actions)
       AND o.payload ->> 'currency' = m.currency
       AND jsonb_typeof(o.payload -> 'amount_minor') = 'number'
       AND (o.payload ->> 'amount_minor')::numeric BETWEEN 1 AND m.per_operation_max_minor
       AND (m.for_principal IS NULL OR m.for_principal = o.submitted_by)
       AND o.payee ->> 'status' = 'found'
       AND CASE WHEN m.payees IS NULL THEN (o.payee ->> 'verified')::boolean
                ELSE m.payees ->> (o.payee ->> 'id') = o.payee -> 'account' ->> 'fingerprint' END
$$;

-- Approves, by an active mandate, each of these operations that one covers (`ids` and
-- `pairs` as the claim names them). Execute calls it in the transaction of its claim.
-- Returns how many it approved.
CREATE FUNCTION fleet_mandate_approve(ids text[], pairs text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    o operations;
    m record;
    used mandates;
    amount bigint;
    approved integer := 0;
BEGIN
    FOR o IN
        SELECT * FROM operations
        WHERE operation_id = ANY (ids) AND tenant_id || ' ' || operation_id = ANY (pairs)
          AND status = 'not_started' AND approval_status = 'pending'
          AND approval_expires_at > now() AND escalated_at IS NULL
        ORDER BY operation_id, tenant_id
        FOR NO KEY UPDATE
    LOOP
        CONTINUE WHEN NOT fleet_mandate_may_approve(o);
        amount := (o.payload ->> 'amount_minor')::bigint;
        used := NULL;
        FOR m IN
            SELECT mandate_id FROM mandates md
            WHERE md.tenant_id = o.tenant_id AND md.revoked_at IS NULL
              AND md.valid_from <= now() AND md.valid_until > now()
              AND fleet_mandate_covers(md, o)
            ORDER BY md.valid_until, md.mandate_id
        LOOP
            -- The one place a budget is taken: re-judged on the row's newest version once
            -- its lock is ours, so racing claims never take more than is left.
            UPDATE mandates SET spent_minor = spent_minor + amount, used_count = used_count + 1
            WHERE mandate_id = m.mandate_id AND revoked_at IS NULL
              AND valid_from <= now() AND valid_until > now()
              AND spent_minor + amount <= budget_minor AND used_count < count_limit
            RETURNING * INTO used;
            EXIT WHEN used.mandate_id IS NOT NULL;
        END LOOP;
        CONTINUE WHEN used.mandate_id IS NULL;
        INSERT INTO mandate_uses (operation_id, tenant_id, mandate_id, amount_minor)
        VALUES (o.operation_id, o.tenant_id, used.mandate_id, amount);
        UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
            decided_by = 'mandate:' || used.mandate_id, decided_at = now(), updated_at = now()
        WHERE operation_id = o.operation_id AND tenant_id = o.tenant_id;
        INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, evidence)
        VALUES (o.operation_id, o.tenant_id, 'approved', o.fence, 'mandate:' || used.mandate_id,
                jsonb_build_object('mandate_id', used.mandate_id, 'amount_minor', amount,
                                   'currency', used.currency, 'signed_by', used.signed_by,
                                   'spent_minor', used.spent_minor, 'budget_minor', used.budget_minor,
                                   'used_count', used.used_count, 'count_limit', used.count_limit));
        approved := approved + 1;
    END LOOP;
    RETURN approved;
END $$;
REVOKE ALL ON FUNCTION fleet_mandate_approve(text[], text[]) FROM PUBLIC;

-- Whether the operation is approved by a mandate that still stands (not revoked): what
-- the claim asks of an operation no quorum of approvals approved.
CREATE FUNCTION fleet_mandate_holds(op text, tenant text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT FROM mandate_uses u JOIN mandates m USING (mandate_id)
                   WHERE u.operation_id = op AND u.tenant_id = tenant
                     AND u.released_at IS NULL AND m.revoked_at IS NULL)
$$;
REVOKE ALL ON FUNCTION fleet_mandate_holds(text, text) FROM PUBLIC;

-- Whether the operation's approval by `decider` (`mandate:<id>`) is a live use of that
-- mandate, written in this transaction or before, and the mandate stands.
CREATE FUNCTION fleet_mandate_approved(op text, tenant text, decider text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT FROM mandate_uses u JOIN mandates m USING (mandate_id)
                   WHERE u.operation_id = op AND u.tenant_id = tenant AND u.released_at IS NULL
                     AND m.revoked_at IS NULL AND 'mandate:' || u.mandate_id = decider)
$$;
REVOKE ALL ON FUNCTION fleet_mandate_approved(text, text, text) FROM PUBLIC;

-- The move to approved: a quorum of live approvals (0055), or a mandate's approval
-- written in this transaction by `fleet_mandate_approve` (which alone may: it runs with
-- the owner's rights; any other role that names a mandate as the decider is refused).
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

-- Whether `who` may revoke what `signer` signed: the signer itself, or a live admin.
CREATE FUNCTION fleet_may_revoke(who text, signer text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT who = signer
        OR EXISTS (SELECT FROM principals WHERE name = who AND role = 'admin' AND removed_at IS NULL)
$$;
REVOKE ALL ON FUNCTION fleet_may_revoke(text, text) FROM PUBLIC;

-- Revokes mandate `md` of `tenant` as `who` (its signer or an admin). Returns the mandate
-- as it is after (NULL: no such mandate of that tenant). Revoking twice changes nothing.
-- The mandate's row is locked first: a claim taking its budget either committed before
-- (its operation is claimed and runs) or finds it revoked.
CREATE FUNCTION fleet_mandate_revoke(md text, tenant text, who text) RETURNS mandates
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m mandates;
    u record;
    back integer := 0;
BEGIN
    SELECT * INTO m FROM mandates WHERE mandate_id = md AND tenant_id = tenant FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF NOT fleet_may_revoke(who, m.signed_by) THEN
        RAISE EXCEPTION 'mandate % may be revoked by its signer or an admin, not %', md, who
            USING ERRCODE = 'insufficient_privilege', TABLE = 'mandates';
    END IF;
    IF m.revoked_at IS NOT NULL THEN
        RETURN m;
    END IF;
    FOR u IN
        SELECT us.operation_id, us.tenant_id, us.amount_minor FROM mandate_uses us
        JOIN operations o USING (operation_id, tenant_id)
        WHERE us.mandate_id = md AND us.released_at IS NULL AND o.status = 'not_started'
        ORDER BY us.operation_id
        FOR NO KEY UPDATE OF o
    LOOP
        UPDATE mandate_uses SET released_at = now()
        WHERE operation_id = u.operation_id AND tenant_id = u.tenant_id AND released_at IS NULL;
        UPDATE mandates SET spent_minor = spent_minor - u.amount_minor, used_count = used_count - 1
        WHERE mandate_id = md;
        UPDATE operations SET approval_status = 'pending', approved_hash = NULL, decided_by = NULL,
            decided_at = NULL, updated_at = now()
        WHERE operation_id = u.operation_id AND tenant_id = u.tenant_id AND approval_status = 'approved';
        INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, reason, evidence)
        SELECT operation_id, tenant_id, 'approval_voided', fence, 'access', 'mandate_revoked',
               jsonb_build_object('mandate_id', md, 'revoked_by', who, 'back_to_pending', true)
        FROM operations WHERE operation_id = u.operation_id AND tenant_id = u.tenant_id;
        back := back + 1;
    END LOOP;
    UPDATE mandates SET revoked_at = now(), revoked_by = who WHERE mandate_id = md RETURNING * INTO m;
    INSERT INTO mandate_events (mandate_id, kind, actor, evidence)
    VALUES (md, 'revoked', who, jsonb_build_object('remaining_minor', m.budget_minor - m.spent_minor,
                                                   'operations_back_to_pending', back));
    RETURN m;
END $$;
REVOKE ALL ON FUNCTION fleet_mandate_revoke(text, text, text) FROM PUBLIC;

-- One approval revoked: by its signer or an admin, of an operation not started. The row
-- stays, voided (`approval_revoked`); the operation goes back to pending if what remains
-- no longer makes its quorum. Returns whether an approval was voided.
ALTER TABLE approvals DROP CONSTRAINT approvals_voided_reason_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_voided_reason_check
    CHECK (voided_reason IN ('approver_removed', 'approver_role_changed', 'tenant_withdrawn', 'approval_revoked'));

CREATE FUNCTION fleet_approval_revoke(op text, tenant text, p text, who text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    o operations;
    back_to_pending boolean;
BEGIN
    SELECT * INTO o FROM operations WHERE operation_id = op AND tenant_id = tenant FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT fleet_may_revoke(who, p) THEN
        RAISE EXCEPTION 'an approval may be revoked by its approver or an admin, not %', who
            USING ERRCODE = 'insufficient_privilege', TABLE = 'approvals';
    END IF;
    IF o.status <> 'not_started' THEN
        RAISE EXCEPTION 'operation % has started: its approvals are the record of what ran', op
            USING ERRCODE = 'check_violation', TABLE = 'approvals', CONSTRAINT = 'approvals_revoked_before_start';
    END IF;
    UPDATE approvals SET voided_at = now(), voided_reason = 'approval_revoked'
    WHERE operation_id = op AND tenant_id = tenant AND principal = p AND voided_at IS NULL;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    WITH moved AS (
        UPDATE operations SET approval_status = 'pending', approved_hash = NULL, decided_by = NULL,
            decided_at = NULL, updated_at = now()
        WHERE operation_id = op AND tenant_id = tenant
          AND approval_status = 'approved' AND status = 'not_started'
          AND NOT fleet_quorum_met(op, tenant)
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM moved) INTO back_to_pending;
    INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, reason, evidence)
    VALUES (op, tenant, 'approval_voided', o.fence, 'access', 'approval_revoked',
            jsonb_build_object('principal', p, 'revoked_by', who, 'back_to_pending', back_to_pending,
                               'approvals_counted', (fleet_quorum_count(op, tenant)).counted));
    RETURN true;
END $$;
REVOKE ALL ON FUNCTION fleet_approval_revoke(text, text, text, text) FROM PUBLIC;

-- The pending operations a mandate covers now (at most `lim`), for the API to ring
-- execute for them when the mandate is made.
CREATE FUNCTION fleet_mandate_pending(md text, lim integer) RETURNS TABLE (operation_id text, tenant_id text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT o.operation_id, o.tenant_id FROM mandates m
    JOIN operations o ON o.tenant_id = m.tenant_id
    WHERE m.mandate_id = md AND o.status = 'not_started' AND o.approval_status = 'pending'
      AND o.approval_expires_at > now() AND fleet_mandate_covers(m, o) AND fleet_mandate_may_approve(o)
    ORDER BY o.created_at, o.operation_id
    LIMIT lim
$$;
REVOKE ALL ON FUNCTION fleet_mandate_pending(text, integer) FROM PUBLIC;

-- Grants: the API makes and revokes mandates and revokes approvals (through the functions
-- alone) and reads them; execute takes their budgets at claim and reads them to verify
-- their signatures; every component reads what it needs, nothing writes the tables.
REVOKE ALL ON mandates, mandate_uses, mandate_events FROM PUBLIC;
GRANT SELECT ON mandates, mandate_uses, mandate_events TO fleet_api;
GRANT SELECT ON mandates, mandate_uses TO fleet_execute;
GRANT EXECUTE ON FUNCTION fleet_mandate_create(jsonb, text, text, text, bytea) TO fleet_api;
GRANT EXECUTE ON FUNCTION fleet_mandate_revoke(text, text, text) TO fleet_api;
GRANT EXECUTE ON FUNCTION fleet_approval_revoke(text, text, text, text) TO fleet_api;
GRANT EXECUTE ON FUNCTION fleet_mandate_pending(text, integer) TO fleet_api;
GRANT EXECUTE ON FUNCTION fleet_mandate_approve(text[], text[]) TO fleet_execute;
GRANT EXECUTE ON FUNCTION fleet_mandate_holds(text, text) TO fleet_execute;
