-- Approvers' notices only where someone is told. 0077 wrote a notice with every `prepared`
-- event, whatever the tenant, and the notifier then planned the notices of tenants without
-- a channel into nothing: a row written, indexed, read and updated per operation for
-- nobody. The tenants that have a channel are now kept here (names only, never where the
-- channel points or its secrets), set by fleet-relay at start from its channels file; the
-- notice trigger writes a notice only for them.
--
-- All relays of a deployment read the same channels file, so each one's start sets the
-- same list. A tenant added to the file is told of the operations that start waiting after
-- a relay reading it has started, as a channel added later is not told of notices planned
-- before it.

CREATE TABLE approval_notice_tenants (
    tenant_id text PRIMARY KEY,
    since timestamptz NOT NULL DEFAULT now()
);

-- Sets the list to exactly `p_tenants` (the tenants of the relay's channels file): those
-- no longer named leave it, new ones join it. Returns how many tenants it now holds.
CREATE FUNCTION fleet_notify_tenants(p_tenants text[]) RETURNS integer LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    held integer;
BEGIN
    DELETE FROM approval_notice_tenants WHERE NOT (tenant_id = ANY (p_tenants));
    INSERT INTO approval_notice_tenants (tenant_id)
    SELECT DISTINCT t FROM unnest(p_tenants) AS t WHERE t IS NOT NULL
    ON CONFLICT (tenant_id) DO NOTHING;
    SELECT count(*) INTO held FROM approval_notice_tenants;
    RETURN held;
END $$;
REVOKE ALL ON FUNCTION fleet_notify_tenants(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_notify_tenants(text[]) TO fleet_relay;
GRANT SELECT ON approval_notice_tenants TO fleet_relay;

-- As 0077's, for a tenant on the list only: an operation of any other tenant writes its
-- `prepared` event and nothing more.
CREATE OR REPLACE FUNCTION fleet_note_approval_wait() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM approval_notice_tenants t WHERE t.tenant_id = NEW.tenant_id) THEN
        RETURN NULL;
    END IF;
    INSERT INTO approval_notices (tenant_id, operation_id, outbox_id, view, approval_expires_at)
    SELECT o.tenant_id, o.operation_id, NEW.id, NEW.data, o.approval_expires_at
    FROM operations o
    WHERE o.tenant_id = NEW.tenant_id AND o.operation_id = NEW.operation_id
      AND o.approval_status = 'pending'
    ON CONFLICT (outbox_id) DO NOTHING;
    RETURN NULL;
END $$;
