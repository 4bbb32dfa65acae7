-- The queue door knows who is speaking.
--
-- An agent principal may have a broker user of its own (`fleetctl principal add … --broker`).
-- RabbitMQ checks that a message's `user_id` property is the publishing connection's user,
-- so prepare can take that property as the sender's identity and find the principal it
-- speaks for here: the intent is then judged as the API judges an authenticated caller
-- (role, tenant grant) and stored with `submitted_by`.
--
-- `broker_user` is set by the owner (fleetctl), never by a component; removing a principal
-- clears it. Prepare may read who a broker user is, and nothing else of the principals.

ALTER TABLE principals
    ADD COLUMN broker_user text UNIQUE
        CHECK (broker_user ~ '^[A-Za-z0-9][A-Za-z0-9._@:-]{0,254}$');

GRANT SELECT (name, role, removed_at, broker_user) ON principals TO fleet_prepare;
GRANT SELECT ON principal_tenants TO fleet_prepare;

-- Whoever writes it, `submitted_by` names a live agent principal granted the operation's
-- tenant: a component cannot file an intent in the name of a principal that could not
-- have submitted it. (The owner, running migrations and repairs, is not judged.)
CREATE FUNCTION fleet_may_submit(p text, tenant text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT FROM principals pr JOIN principal_tenants pt ON pt.principal = pr.name
                   WHERE pr.name = p AND pr.role = 'agent' AND pr.removed_at IS NULL
                     AND pt.tenant_id = tenant)
$$;

CREATE FUNCTION operations_submitter_is_granted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.submitted_by IS NOT NULL AND fleet_component() IS NOT NULL
       AND NOT fleet_may_submit(NEW.submitted_by, NEW.tenant_id) THEN
        RAISE EXCEPTION 'submitted_by % may not submit for this tenant', NEW.submitted_by
            USING ERRCODE = 'insufficient_privilege', TABLE = 'operations';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER operations_submitter_is_granted
    BEFORE INSERT ON operations
    FOR EACH ROW WHEN (NEW.submitted_by IS NOT NULL)
    EXECUTE FUNCTION operations_submitter_is_granted();
