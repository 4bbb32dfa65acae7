-- Dead letters kept in Postgres. fleet-relay moves every message the broker holds in a
-- work queue's dead-letter queue into `dead_letters` and acks it only after the commit,
-- so reading, replaying or discarding one never touches the broker again (a queue's
-- delivery limit cannot lose what a person is looking at). Every replay and discard is
-- recorded in `dead_letter_actions`. Both tables are written only by the functions
-- below, with the owner's rights: the relay may keep a message and nothing else, the API
-- may record what an operator did and nothing else, and no role may rewrite the record.

CREATE TABLE dead_letters (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The message id when the publisher set one, else a SHA-256 of queue, body and
    -- headers: a message redelivered after a crash between the insert and the ack is
    -- kept once.
    dedup_key text NOT NULL UNIQUE,
    -- The work queue (wire name, without namespace) the message was dead-lettered from.
    queue text NOT NULL,
    -- Why, as the fleet's `x-fleet-reason` header (or `broker:<reason>`) said; after a
    -- replay that was refused again, the new reason.
    reason text,
    first_reason text,
    body bytea NOT NULL,
    headers jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- The AMQP `user_id` the broker validated for the original publisher: the only
    -- identity a replay may submit under (never one named in the body).
    user_id text,
    -- The tenant the body names, when it is a JSON object naming one: listings are
    -- scoped by it.
    tenant_id text,
    dead_lettered_at timestamptz,
    kept_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    resolution text CHECK (resolution IN ('replayed', 'discarded')),
    resolved_by text,
    CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);
CREATE INDEX dead_letters_unresolved ON dead_letters (id) WHERE resolved_at IS NULL;

CREATE TABLE dead_letter_actions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dead_letter_id bigint NOT NULL REFERENCES dead_letters (id),
    action text NOT NULL CHECK (action IN ('replay', 'discard')),
    actor text NOT NULL,
    -- `discarded`, `replayed`, `refused` (with the new reason), `unavailable`, …
    outcome text NOT NULL,
    reason text,
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letter_actions_of ON dead_letter_actions (dead_letter_id, id);

-- The relay keeps one message. Returns the row's id (an earlier one's for a message
-- already kept). The tenant is read from the body only when the body is a JSON object.
CREATE FUNCTION fleet_keep_dead_letter(
    p_queue text, p_body bytea, p_headers jsonb, p_user_id text, p_reason text,
    p_dead_lettered_at timestamptz, p_dedup_key text
) RETURNS bigint LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    doc jsonb;
    tenant text;
    kept bigint;
BEGIN
    BEGIN
        doc := convert_from(p_body, 'UTF8')::jsonb;
        IF jsonb_typeof(doc) = 'object' AND jsonb_typeof(doc -> 'tenant_id') = 'string' THEN
            tenant := doc ->> 'tenant_id';
        END IF;
    EXCEPTION WHEN OTHERS THEN
        -- Not UTF-8 or not JSON: kept as bytes, visible to every operator.
        tenant := NULL;
    END;
    INSERT INTO dead_letters (dedup_key, queue, reason, first_reason, body, headers, user_id,
                              tenant_id, dead_lettered_at)
    VALUES (p_dedup_key, p_queue, p_reason, p_reason, p_body, COALESCE(p_headers, '{}'::jsonb),
            p_user_id, tenant, p_dead_lettered_at)
    ON CONFLICT (dedup_key) DO NOTHING
    RETURNING id INTO kept;
    IF kept IS NULL THEN
        SELECT id INTO kept FROM dead_letters WHERE dedup_key = p_dedup_key;
    END IF;
    RETURN kept;
END $$;
REVOKE ALL ON FUNCTION fleet_keep_dead_letter(text, bytea, jsonb, text, text, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_keep_dead_letter(text, bytea, jsonb, text, text, timestamptz, text)
    TO fleet_relay;

-- An operator's replay or discard of an unresolved dead letter: records the action and,
-- when `p_resolution` is given, resolves the row; a replay refused again records its new
-- reason and leaves the row waiting. Returns false (recording nothing) when the row is
-- unknown or already resolved, so two operators cannot both resolve it.
CREATE FUNCTION fleet_dead_letter_act(
    p_id bigint, p_action text, p_actor text, p_outcome text, p_reason text, p_resolution text
) RETURNS boolean LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM 1 FROM dead_letters WHERE id = p_id AND resolved_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_resolution IS NOT NULL THEN
        UPDATE dead_letters SET resolved_at = now(), resolution = p_resolution, resolved_by = p_actor
        WHERE id = p_id;
    ELSIF p_action = 'replay' AND p_outcome = 'refused' AND p_reason IS NOT NULL THEN
        UPDATE dead_letters SET reason = p_reason WHERE id = p_id;
    END IF;
    INSERT INTO dead_letter_actions (dead_letter_id, action, actor, outcome, reason)
    VALUES (p_id, p_action, p_actor, p_outcome, p_reason);
    RETURN true;
END $$;
REVOKE ALL ON FUNCTION fleet_dead_letter_act(bigint, text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_dead_letter_act(bigint, text, text, text, text, text) TO fleet_api;

GRANT SELECT ON dead_letters, dead_letter_actions TO fleet_api;
-- The relay's gauge of stored, unresolved dead letters.
GRANT SELECT (id, queue, resolved_at) ON dead_letters TO fleet_relay;
