-- Standing mandates: a revocation that stops payment, and mandate events on fleet.events.
--
-- Until now a mandate's revocation stopped new claims on it (0061), but an operation
-- claimed under it before the revocation committed could still be sent afterwards: the
-- claim was the moment of the decision. Here the moment is the provider call itself:
-- every provider call for an operation a mandate approved starts (and is answered, or
-- given up) before the revocation's commit, or none does.
--
-- * The calls under a mandate and its revocation share one lock, an advisory lock keyed
--   on the mandate (`fleet_mandate_lock_key`). Execute takes it shared (`fleet_mandate_hold`,
--   on a connection it keeps from before the send mark until the call's answer) and learns in the same breath whether the mandate still stands; the
--   revocation (`fleet_mandate_revoke`) takes it exclusive before anything else, so it
--   waits for the calls in flight, and a call that asks after the revocation began waits
--   for its commit and then finds the mandate revoked. Advisory locks queue fairly (a
--   shared request waits behind a waiting exclusive one), so a steady stream of calls
--   cannot starve a revocation, as row locks taken by a stream of sharers could.
--   `revoked_at` is the clock when that lock was ours: after every such call's answer,
--   before the commit.
-- * The database refuses the send mark (0060) of an attempt whose operation a revoked
--   mandate approved (constraint `attempts_mark_under_a_live_mandate`, 23514), whoever
--   writes it; it takes the mandate's row lock to decide, so a mark and a revocation are
--   ordered: no request is marked sent after the revocation committed.
-- * An operation a revoked mandate approved that goes back to `not_started` without
--   having paid (the call refused at its mark or its hold, a claim released unsent, a
--   lookup that proved nothing happened) goes back to `pending` in the same transaction:
--   its mandate use is released, its amount given back (shown as revoked, not spent), and
--   the history says `approval_voided` with reason `mandate_revoked`. A person decides.
--
-- Mandate events. `mandate_events` (0061) held `created` and `revoked`; it now also holds
-- `used` (an operation approved by the mandate: its id, amount and what is left, written
-- with the use) and `exhausted` (its budget or its count is used up), each numbered per
-- mandate (`sequence`). Every row is published through the outcome outbox, in the same
-- transaction, as `fleet.mandate.<kind>` with the mandate's view (`mandate_view`) as its
-- data: the relay publishes one mandate's events in order, as it does an operation's.

-- ---------------------------------------------------------------------------------------
-- The lock calls and revocations share.

CREATE FUNCTION fleet_mandate_lock_key(md text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtextextended('fleet.mandate:' || md, 0) $$;

-- Takes, for the caller's session, the shared lock of the mandate that approved operation
-- `op` of `tenant` at claim `f`, and answers that mandate's id when the call may go: the
-- claim is live and the mandate stands with the operation's use live. Otherwise the lock
-- is let go and the answer is NULL. A session lock, not a transaction's: execute holds it
-- on one connection, idle, through the send mark and the call until its answer, then lets
-- it go (`fleet_mandate_unhold`); a connection that dies lets it go with it.
CREATE FUNCTION fleet_mandate_hold(op text, tenant text, f bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    md text;
BEGIN
    SELECT substr(o.decided_by, length('mandate:') + 1) INTO md FROM operations o
    WHERE o.operation_id = op AND o.tenant_id = tenant AND o.fence = f
      AND o.status = 'in_progress' AND o.decided_by LIKE 'mandate:%';
    IF md IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_lock_shared(fleet_mandate_lock_key(md));
    -- A statement of its own, after the lock: it sees a revocation that committed while
    -- this call waited.
    IF EXISTS (SELECT FROM mandates m JOIN mandate_uses u USING (mandate_id)
               WHERE m.mandate_id = md AND m.revoked_at IS NULL
                 AND u.operation_id = op AND u.tenant_id = tenant AND u.released_at IS NULL) THEN
        RETURN md;
    END IF;
    PERFORM pg_advisory_unlock_shared(fleet_mandate_lock_key(md));
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION fleet_mandate_hold(text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_mandate_hold(text, text, bigint) TO fleet_execute;

-- Lets go of the hold on mandate `md` this session took (false: it held none).
CREATE FUNCTION fleet_mandate_unhold(md text) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT pg_advisory_unlock_shared(fleet_mandate_lock_key(md))
$$;
REVOKE ALL ON FUNCTION fleet_mandate_unhold(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_mandate_unhold(text) TO fleet_execute;

-- No request is marked sent under a revoked mandate.
CREATE FUNCTION attempts_mark_under_a_live_mandate() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    md text;
    revoked timestamptz;
BEGIN
    SELECT substr(o.decided_by, length('mandate:') + 1) INTO md FROM operations o
    WHERE o.operation_id = NEW.operation_id AND o.tenant_id = NEW.tenant_id
      AND o.decided_by LIKE 'mandate:%';
    IF md IS NULL THEN
        RETURN NEW;
    END IF;
    -- The row lock orders this mark with a revocation: one waits for the other's commit,
    -- and reads the row as that commit left it.
    SELECT m.revoked_at INTO revoked FROM mandates m WHERE m.mandate_id = md FOR KEY SHARE;
    IF revoked IS NOT NULL THEN
        RAISE EXCEPTION 'attempt % of operation %: mandate % was revoked; nothing is sent under it', NEW.fence, NEW.operation_id, md
            USING ERRCODE = 'check_violation', TABLE = 'attempts',
                  CONSTRAINT = 'attempts_mark_under_a_live_mandate';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER attempts_mark_under_a_live_mandate
    BEFORE UPDATE OF request_sent ON attempts
    FOR EACH ROW
    WHEN (NEW.request_sent IS TRUE AND OLD.request_sent IS DISTINCT FROM TRUE)
    EXECUTE FUNCTION attempts_mark_under_a_live_mandate();

-- An operation a revoked mandate approved, back to not_started without an effect, waits
-- for a person again.
CREATE FUNCTION operations_unapproved_by_a_revoked_mandate() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    md text := substr(NEW.decided_by, length('mandate:') + 1);
    u mandate_uses;
BEGIN
    IF NOT EXISTS (SELECT FROM mandates WHERE mandate_id = md AND revoked_at IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    UPDATE mandate_uses SET released_at = now()
    WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id AND released_at IS NULL
    RETURNING * INTO u;
    IF u.mandate_id IS NOT NULL THEN
        UPDATE mandates SET spent_minor = spent_minor - u.amount_minor, used_count = used_count - 1
        WHERE mandate_id = u.mandate_id;
    END IF;
    UPDATE operations SET approval_status = 'pending', approved_hash = NULL, decided_by = NULL,
        decided_at = NULL, updated_at = now()
    WHERE operation_id = NEW.operation_id AND tenant_id = NEW.tenant_id
      AND status = 'not_started' AND approval_status = 'approved' AND decided_by = NEW.decided_by;
    INSERT INTO operation_events (operation_id, tenant_id, kind, fence, actor, reason, evidence)
    VALUES (NEW.operation_id, NEW.tenant_id, 'approval_voided', NEW.fence, 'access', 'mandate_revoked',
            jsonb_build_object('mandate_id', md, 'back_to_pending', true,
                               'amount_given_back_minor', u.amount_minor));
    RETURN NULL;
END $$;

CREATE TRIGGER operations_unapproved_by_a_revoked_mandate
    AFTER UPDATE OF status ON operations
    FOR EACH ROW
    WHEN (OLD.status IN ('in_progress', 'unknown') AND NEW.status = 'not_started'
          AND NEW.approval_status = 'approved' AND NEW.decided_by LIKE 'mandate:%')
    EXECUTE FUNCTION operations_unapproved_by_a_revoked_mandate();

-- ---------------------------------------------------------------------------------------
-- Mandate events.

ALTER TABLE mandate_events DROP CONSTRAINT mandate_events_kind_check;
ALTER TABLE mandate_events ADD CONSTRAINT mandate_events_kind_check
    CHECK (kind IN ('created', 'used', 'exhausted', 'revoked'));
ALTER TABLE mandate_events ADD COLUMN sequence integer CHECK (sequence > 0);

-- A mandate as agents and people read it (the API's view of `fleet_store::MandateRow`):
-- what was signed, and what is left of it.
CREATE FUNCTION mandate_view(m mandates) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'mandate_id', m.mandate_id,
        'tenant_id', m.tenant_id,
        'statement', m.statement,
        'mandate_hash', m.mandate_hash,
        'signed_by', m.signed_by,
        'key_id', m.key_id,
        'created_at', fleet_utc(m.created_at),
        'status', CASE WHEN m.revoked_at IS NOT NULL THEN 'revoked'
                       WHEN m.valid_until <= now() THEN 'expired' ELSE 'active' END,
        'currency', m.currency,
        'budget_minor', m.budget_minor,
        'spent_minor', m.spent_minor,
        'available_minor', CASE WHEN m.revoked_at IS NOT NULL OR m.valid_until <= now() THEN 0
                                ELSE m.budget_minor - m.spent_minor END,
        'revoked_minor', CASE WHEN m.revoked_at IS NOT NULL THEN m.budget_minor - m.spent_minor ELSE 0 END,
        'count_limit', m.count_limit,
        'used_count', m.used_count,
        'revoked_at', fleet_utc(m.revoked_at),
        'revoked_by', m.revoked_by)
$$;

-- Numbers each mandate event (1, 2, 3, … per mandate). Every writer holds the mandate's
-- row lock already (its creation, the update that takes or gives back its budget, the
-- revocation); taking it here makes that a rule.
CREATE FUNCTION mandate_events_number() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    PERFORM 1 FROM mandates WHERE mandate_id = NEW.mandate_id FOR NO KEY UPDATE;
    NEW.sequence := 1 + COALESCE((SELECT max(e.sequence) FROM mandate_events e
                                  WHERE e.mandate_id = NEW.mandate_id), 0);
    RETURN NEW;
END $$;
CREATE TRIGGER mandate_events_number BEFORE INSERT ON mandate_events
    FOR EACH ROW EXECUTE FUNCTION mandate_events_number();

-- Publishes each mandate event through the outcome outbox: its queue is the mandate's
-- (operation_id and event_key hold the mandate id), its type `mandate_<kind>`
-- (`fleet.mandate.<kind>` on the wire, `fleet_core::EventType`).
CREATE FUNCTION mandate_events_to_outbox() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m mandates;
BEGIN
    SELECT * INTO STRICT m FROM mandates WHERE mandate_id = NEW.mandate_id;
    INSERT INTO operation_outbox (operation_id, event_key, sequence, event_type, tenant_id, history_id,
                                  occurred_at, data)
    VALUES (m.mandate_id, m.mandate_id, NEW.sequence, 'mandate_' || NEW.kind, m.tenant_id, NEW.id, NEW.at,
            mandate_view(m) || jsonb_build_object(
                'sequence', NEW.sequence,
                'event', jsonb_build_object('kind', NEW.kind, 'actor', NEW.actor,
                                            'evidence', COALESCE(NEW.evidence, '{}'::jsonb))));
    RETURN NULL;
END $$;
CREATE TRIGGER mandate_events_to_outbox AFTER INSERT ON mandate_events
    FOR EACH ROW EXECUTE FUNCTION mandate_events_to_outbox();

ALTER TABLE operation_outbox DROP CONSTRAINT operation_outbox_event_type_check;
ALTER TABLE operation_outbox ADD CONSTRAINT operation_outbox_event_type_check CHECK (event_type IN (
    'prepared', 'approval_recorded', 'approved', 'approval_voided', 'rejected', 'approval_expired',
    'superseded', 'executing', 'accepted', 'succeeded', 'failed', 'cancelled', 'unknown',
    'requeued', 'escalated', 'resolved', 'disputed',
    'mandate_created', 'mandate_used', 'mandate_exhausted', 'mandate_revoked'));

-- Each use is an event of its mandate, written with the use (the consumption holds the
-- mandate's row lock); the use that takes the last of the budget or the count is followed
-- by the mandate's exhaustion. (A use given back never exhausts it.)
CREATE FUNCTION mandate_uses_are_events() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m mandates;
BEGIN
    SELECT * INTO STRICT m FROM mandates WHERE mandate_id = NEW.mandate_id;
    INSERT INTO mandate_events (mandate_id, kind, actor, evidence)
    VALUES (NEW.mandate_id, 'used', 'mandate:' || NEW.mandate_id,
            jsonb_build_object('operation_id', NEW.operation_id, 'amount_minor', NEW.amount_minor,
                               'spent_minor', m.spent_minor, 'used_count', m.used_count));
    IF m.spent_minor >= m.budget_minor OR m.used_count >= m.count_limit THEN
        INSERT INTO mandate_events (mandate_id, kind, actor, evidence)
        VALUES (NEW.mandate_id, 'exhausted', 'mandate:' || NEW.mandate_id,
                jsonb_build_object('by', CASE WHEN m.used_count >= m.count_limit THEN 'count' ELSE 'budget' END,
                                   'spent_minor', m.spent_minor, 'used_count', m.used_count));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER mandate_uses_are_events AFTER INSERT ON mandate_uses
    FOR EACH ROW EXECUTE FUNCTION mandate_uses_are_events();

-- ---------------------------------------------------------------------------------------
-- The revocation (0061's), after the calls in flight: the exclusive lock first.
CREATE OR REPLACE FUNCTION fleet_mandate_revoke(md text, tenant text, who text) RETURNS mandates
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m mandates;
    u record;
    back integer := 0;
BEGIN
    -- Waits for every call under the mandate that holds it (`fleet_mandate_hold`); a call
    -- that asks from now on waits for this commit.
    PERFORM pg_advisory_xact_lock(fleet_mandate_lock_key(md));
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
    -- The clock now, not the transaction's start: every call that held the mandate was
    -- answered before it, and the commit comes after it.
    UPDATE mandates SET revoked_at = clock_timestamp(), revoked_by = who WHERE mandate_id = md
    RETURNING * INTO m;
    INSERT INTO mandate_events (mandate_id, kind, actor, evidence)
    VALUES (md, 'revoked', who, jsonb_build_object('remaining_minor', m.budget_minor - m.spent_minor,
                                                   'operations_back_to_pending', back));
    RETURN m;
END $$;
