-- A claim that dies before its request was sent is released as not sent.
--
-- Until now a claim whose worker died (killed, or its lease lost) ended `unknown` whatever
-- it had done: the row sat `in_progress` with an expired lease, reconcile could not tell a
-- request that left from one that never did, and asked the provider. A claim that waited
-- for a rate slot (docs/design.md#provider-rates) and died there had sent nothing, yet
-- cost a lookup (and, for a create the provider cannot deduplicate, the wait for its
-- maximum request time and search lag).
--
-- `attempts.request_sent` is a durable mark written BEFORE the request goes out:
--
-- * false: written by the claim itself (the attempt row is inserted with it); nothing of
--   this claim has been sent. This is the one value that proves absence;
-- * true: written and committed right before the request is handed to the network (after
--   its rate slot came, while the lease is live). From then on the request may have left:
--   a claim that dies is `unknown`, as before, and reconcile asks the provider;
-- * NULL: an attempt made before this mark existed (or by a worker that keeps none): it
--   may have been sent, so it is treated as true.
--
-- The crash argument: the mark is committed before the send, so under SIGKILL at any
-- instant either the mark is still false (nothing was handed to the network) or it is
-- true (maybe sent: unknown). When in doubt the answer is "maybe sent", never a blind
-- retry. A mark whose commit was lost in flight counts as written: conservative again.
--
-- The database keeps the mark honest whoever connects (documented SQLSTATE 23514,
-- check_violation):
--
-- * constraint `attempts_send_mark`: an attempt is inserted with NULL or false, never
--   true; the mark only moves false → true, and only while the attempt is unfinished; it
--   never goes back (no one may make a request that may have left look unsent);
-- * constraint `operations_release_unsent`: the move `in_progress` → `not_started` with
--   the reason `claim_lost_before_send` (reconcile releasing a dead claim without a
--   lookup) is made only once the claim's lease ran out and the attempt of its fence is
--   finished with the mark false.
--
-- A released unsent claim is not counted in `operations.attempts`: that count answers
-- "how many claims may have reached the provider", which is what the key-retention check
-- before a same-key retry and the post-settlement audit (migrations/0007) ask. The
-- trigger below lowers it with the release, so no component needs a right to do so.

ALTER TABLE attempts ADD COLUMN request_sent boolean;

GRANT INSERT (request_sent) ON attempts TO fleet_execute;
GRANT UPDATE (request_sent) ON attempts TO fleet_execute;

CREATE FUNCTION attempts_send_mark() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.request_sent THEN
            RAISE EXCEPTION 'attempt % of operation %: an attempt starts with nothing sent', NEW.fence, NEW.operation_id
                USING ERRCODE = 'check_violation', TABLE = 'attempts', CONSTRAINT = 'attempts_send_mark';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.request_sent IS DISTINCT FROM OLD.request_sent
       AND NOT (OLD.request_sent IS FALSE AND NEW.request_sent IS TRUE
                AND OLD.finished_at IS NULL AND NEW.finished_at IS NULL) THEN
        RAISE EXCEPTION 'attempt % of operation %: the send mark only moves from false to true, before the attempt is finished', OLD.fence, OLD.operation_id
            USING ERRCODE = 'check_violation', TABLE = 'attempts', CONSTRAINT = 'attempts_send_mark',
                  HINT = 'see migrations/0060_attempt_send_mark.sql';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER attempts_send_mark
    BEFORE INSERT OR UPDATE OF request_sent ON attempts
    FOR EACH ROW
    EXECUTE FUNCTION attempts_send_mark();

-- A BEFORE trigger, so that it can lower `attempts` in the same row change (column grants
-- check the statement's columns, not what a trigger sets).
CREATE FUNCTION operations_release_unsent() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    -- The lease ran out (no live holder may still send), and the claim's attempt is
    -- finished with its mark false (a finished attempt takes no mark any more).
    IF NOT (OLD.lease_expires_at <= now()
            AND EXISTS (SELECT FROM attempts a
                        WHERE a.operation_id = OLD.operation_id AND a.tenant_id = OLD.tenant_id
                          AND a.fence = OLD.fence AND a.request_sent IS FALSE
                          AND a.finished_at IS NOT NULL)) THEN
        RAISE EXCEPTION 'operation %: claim % may have sent its request; it cannot be released as not sent', OLD.operation_id, OLD.fence
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = 'operations_release_unsent',
                  HINT = 'only an attempt whose send mark is false proves that nothing was sent';
    END IF;
    NEW.attempts := GREATEST(OLD.attempts - 1, 0);
    RETURN NEW;
END $$;

CREATE TRIGGER operations_release_unsent
    BEFORE UPDATE ON operations
    FOR EACH ROW
    WHEN (OLD.status = 'in_progress' AND NEW.status = 'not_started'
          AND NEW.status_reason = 'claim_lost_before_send')
    EXECUTE FUNCTION operations_release_unsent();
