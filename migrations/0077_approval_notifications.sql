-- Approvers notified where they work (docs/notifications.md). An operation that starts
-- waiting for approval writes its `prepared` outbox row; a trigger on that row notes it in
-- `approval_notices` in the same transaction, so the notice exists exactly when the
-- change does. fleet-relay's notifier plans each notice into one row per (operation,
-- channel, kind) of `approval_notifications` (the channels are the deployment's, read
-- from its channels file), unique in the table, then claims due rows with a lease, sends,
-- and marks them sent. Both tables are written only by the functions below, with the
-- owner's rights; the relay holds nothing else on them.

CREATE TABLE approval_notices (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    operation_id text NOT NULL,
    -- The `prepared` outbox row: one notice per operation's start of waiting.
    outbox_id bigint NOT NULL UNIQUE,
    -- operation_view() right after the change (the outbox row's data): what the message
    -- says (action, amount, payee name and masked account, deadline).
    view jsonb NOT NULL,
    approval_expires_at timestamptz NOT NULL,
    noted_at timestamptz NOT NULL DEFAULT now(),
    -- When the notifier planned its rows (none for a tenant without channels).
    planned_at timestamptz
);
CREATE INDEX approval_notices_unplanned ON approval_notices (id) WHERE planned_at IS NULL;

CREATE TABLE approval_notifications (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notice_id bigint NOT NULL REFERENCES approval_notices (id),
    tenant_id text NOT NULL,
    operation_id text NOT NULL,
    -- The channel's name in the deployment's channels file.
    channel text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('waiting', 'reminder')),
    -- Sent with every attempt (the webhook-id header, the e-mail's Message-ID), so that a
    -- receiver can drop the one resend a crash between sending and marking may cause.
    idempotency_id text NOT NULL UNIQUE,
    due_at timestamptz NOT NULL,
    -- A claim holds the row until then; after a failure, the next attempt waits until then.
    leased_until timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    sent_at timestamptz,
    -- Not sent, for good: the operation stopped waiting, or the channel left the file.
    dropped_at timestamptz,
    drop_reason text,
    -- The last failure, as the notifier words it (never a URL, a secret or an address).
    last_error text,
    CONSTRAINT approval_notifications_once UNIQUE (tenant_id, operation_id, channel, kind),
    CHECK ((dropped_at IS NULL) = (drop_reason IS NULL)),
    CHECK (sent_at IS NULL OR dropped_at IS NULL)
);
CREATE INDEX approval_notifications_due ON approval_notifications (due_at)
    WHERE sent_at IS NULL AND dropped_at IS NULL;

-- The notice of an operation that starts waiting, written with its `prepared` event.
CREATE FUNCTION fleet_note_approval_wait() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    INSERT INTO approval_notices (tenant_id, operation_id, outbox_id, view, approval_expires_at)
    SELECT o.tenant_id, o.operation_id, NEW.id, NEW.data, o.approval_expires_at
    FROM operations o
    WHERE o.tenant_id = NEW.tenant_id AND o.operation_id = NEW.operation_id
      AND o.approval_status = 'pending'
    ON CONFLICT (outbox_id) DO NOTHING;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION fleet_note_approval_wait() FROM PUBLIC;
CREATE TRIGGER operation_outbox_approval_wait
    AFTER INSERT ON operation_outbox
    FOR EACH ROW WHEN (NEW.event_type = 'prepared')
    EXECUTE FUNCTION fleet_note_approval_wait();

-- Plans up to `p_limit` notices: for each, one `waiting` row per channel of its tenant
-- (`p_channels`: {"<tenant>": ["<channel>", …]}), due now, and one `reminder` row due
-- `p_reminder_before_s` before the approval expires when that is still ahead (0: no
-- reminders). Unique per (operation, channel, kind): planning twice adds nothing.
-- Returns how many notices it planned.
CREATE FUNCTION fleet_notify_plan(p_limit integer, p_channels jsonb, p_reminder_before_s double precision)
RETURNS integer LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    n record;
    ch text;
    planned integer := 0;
    remind_at timestamptz;
BEGIN
    FOR n IN SELECT * FROM approval_notices WHERE planned_at IS NULL
             ORDER BY id LIMIT p_limit FOR UPDATE SKIP LOCKED LOOP
        remind_at := n.approval_expires_at - make_interval(secs => p_reminder_before_s);
        FOR ch IN SELECT jsonb_array_elements_text(
                      CASE WHEN jsonb_typeof(p_channels -> n.tenant_id) = 'array'
                           THEN p_channels -> n.tenant_id ELSE '[]'::jsonb END) LOOP
            INSERT INTO approval_notifications (notice_id, tenant_id, operation_id, channel, kind,
                                                idempotency_id, due_at)
            VALUES (n.id, n.tenant_id, n.operation_id, ch, 'waiting',
                    fleet_notification_id(n.tenant_id, n.operation_id, ch, 'waiting'), now())
            ON CONFLICT DO NOTHING;
            IF p_reminder_before_s > 0 AND remind_at > now() THEN
                INSERT INTO approval_notifications (notice_id, tenant_id, operation_id, channel, kind,
                                                    idempotency_id, due_at)
                VALUES (n.id, n.tenant_id, n.operation_id, ch, 'reminder',
                        fleet_notification_id(n.tenant_id, n.operation_id, ch, 'reminder'), remind_at)
                ON CONFLICT DO NOTHING;
            END IF;
        END LOOP;
        UPDATE approval_notices SET planned_at = now() WHERE id = n.id;
        planned := planned + 1;
    END LOOP;
    RETURN planned;
END $$;

-- `ntf_` and 32 hex digits of the SHA-256 of tenant, operation, channel and kind: the same
-- for every attempt of one notification, different for any other, and a valid Message-ID
-- local part whatever the names hold.
CREATE FUNCTION fleet_notification_id(p_tenant text, p_operation text, p_channel text, p_kind text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'ntf_' || left(encode(sha256(convert_to(
        p_tenant || chr(10) || p_operation || chr(10) || p_channel || chr(10) || p_kind, 'UTF8')), 'hex'), 32)
$$;

-- Claims up to `p_limit` due notifications for `p_lease_s` seconds (rows another notifier
-- holds are skipped). A row whose operation no longer waits for approval (decided,
-- expired, cancelled) is dropped here and not returned: a reminder goes out only while
-- the operation still waits. Returns what to send, with the seconds left to decide by the
-- database clock.
CREATE FUNCTION fleet_notify_claim(p_limit integer, p_lease_s double precision)
RETURNS TABLE (id bigint, tenant_id text, operation_id text, channel text, kind text,
               idempotency_id text, view jsonb, approval_expires_at text, seconds_left double precision,
               attempts integer)
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT n.id FROM approval_notifications n
        WHERE n.sent_at IS NULL AND n.dropped_at IS NULL AND n.due_at <= now()
          AND (n.leased_until IS NULL OR n.leased_until <= now())
        ORDER BY n.due_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), judged AS (
        SELECT d.id, (o.approval_status = 'pending' AND o.approval_expires_at > now()
                      AND o.status = 'not_started') AS waiting
        FROM due d
        JOIN approval_notifications n ON n.id = d.id
        LEFT JOIN operations o ON o.tenant_id = n.tenant_id AND o.operation_id = n.operation_id
    ), dropped AS (
        UPDATE approval_notifications n SET dropped_at = now(), drop_reason = 'not_waiting',
                                            leased_until = NULL
        FROM judged j WHERE n.id = j.id AND NOT COALESCE(j.waiting, false)
        RETURNING n.id
    )
    UPDATE approval_notifications n
    SET leased_until = now() + make_interval(secs => p_lease_s), attempts = n.attempts + 1
    FROM judged j, approval_notices a, operations o
    WHERE n.id = j.id AND j.waiting AND a.id = n.notice_id
      AND o.tenant_id = n.tenant_id AND o.operation_id = n.operation_id
    RETURNING n.id, n.tenant_id, n.operation_id, n.channel, n.kind, n.idempotency_id, a.view,
              fleet_utc(o.approval_expires_at),
              EXTRACT(EPOCH FROM o.approval_expires_at - now())::float8, n.attempts;
END $$;

-- The notification went out: it is never sent again.
CREATE FUNCTION fleet_notify_sent(p_id bigint) RETURNS boolean LANGUAGE sql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    UPDATE approval_notifications SET sent_at = now(), leased_until = NULL, last_error = NULL
    WHERE id = p_id AND sent_at IS NULL AND dropped_at IS NULL
    RETURNING true
$$;

-- It failed: tried again `p_retry_after_s` from now, with what went wrong (no secret).
CREATE FUNCTION fleet_notify_retry(p_id bigint, p_retry_after_s double precision, p_error text)
RETURNS boolean LANGUAGE sql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    UPDATE approval_notifications
    SET leased_until = now() + make_interval(secs => p_retry_after_s), last_error = left(p_error, 500)
    WHERE id = p_id AND sent_at IS NULL AND dropped_at IS NULL
    RETURNING true
$$;

-- It will never be sent (its channel is no longer configured).
CREATE FUNCTION fleet_notify_drop(p_id bigint, p_reason text) RETURNS boolean LANGUAGE sql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    UPDATE approval_notifications SET dropped_at = now(), drop_reason = p_reason, leased_until = NULL
    WHERE id = p_id AND sent_at IS NULL AND dropped_at IS NULL
    RETURNING true
$$;

REVOKE ALL ON FUNCTION fleet_notify_plan(integer, jsonb, double precision) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_notify_claim(integer, double precision) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_notify_sent(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_notify_retry(bigint, double precision, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_notify_drop(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_notify_plan(integer, jsonb, double precision) TO fleet_relay;
GRANT EXECUTE ON FUNCTION fleet_notify_claim(integer, double precision) TO fleet_relay;
GRANT EXECUTE ON FUNCTION fleet_notify_sent(bigint) TO fleet_relay;
GRANT EXECUTE ON FUNCTION fleet_notify_retry(bigint, double precision, text) TO fleet_relay;
GRANT EXECUTE ON FUNCTION fleet_notify_drop(bigint, text) TO fleet_relay;

-- What was sent and what waits, for the relay's gauges and an operator's look.
GRANT SELECT ON approval_notices, approval_notifications TO fleet_relay;
