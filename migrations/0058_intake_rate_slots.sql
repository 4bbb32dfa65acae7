-- The intake's payee lookups (fleet-prepare, fleet-api) take their slots from the same
-- request schedule per provider as execute's and reconcile's calls
-- (`0052_provider_rates.sql`), so that every component together keeps to the rate the
-- provider allows (docs/design.md#provider-rates).
--
-- Calls for operations people already approved come first: an intake reservation is
-- only served while the schedule has at most `horizon_ms` of slots handed out ahead of
-- now (the backlog that execute's and reconcile's demand builds up). With more queued, it
-- gets no slot and is told how long until the backlog is down to the horizon, and asks
-- again then; nothing is handed out, so the schedule is not moved. An idle or lightly
-- used schedule serves the intake at once, at the full rate, so no capacity is held back.
-- A 429 answered to a lookup pauses the schedule for everyone, as any other 429 does.

CREATE FUNCTION fleet_reserve_intake_slots(
    p text, rate_per_s double precision, slots integer, recovery_per_s double precision,
    horizon_ms double precision,
    OUT waits_ms double precision[], OUT paused_ms double precision, OUT deferred_ms double precision)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    t timestamptz;
    r provider_rates;
    spacing interval;
    start timestamptz;
    backlog_ms double precision;
BEGIN
    -- Refused like the other reservations (invalid_parameter_value, SQLSTATE 22023): a
    -- component may not ask for more than the schedule's bounds.
    IF rate_per_s IS NULL OR NOT rate_per_s BETWEEN 0.001 AND 1000000
       OR slots IS NULL OR NOT slots BETWEEN 1 AND 1000
       OR recovery_per_s IS NULL OR NOT recovery_per_s BETWEEN 0 AND 1
       OR horizon_ms IS NULL OR NOT horizon_ms BETWEEN 0 AND 60000 THEN
        RAISE EXCEPTION 'an intake reservation needs a rate, 1 to 1000 slots, a recovery in [0, 1] and a horizon of at most a minute'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    r := fleet_lock_provider_rate(p);
    t := clock_timestamp();
    paused_ms := greatest(0, extract(epoch FROM r.paused_until - t)::double precision * 1000);
    backlog_ms := extract(epoch FROM r.next_slot_at - t)::double precision * 1000;
    IF backlog_ms > horizon_ms THEN
        waits_ms := ARRAY[]::double precision[];
        deferred_ms := backlog_ms - horizon_ms;
        RETURN;
    END IF;
    spacing := make_interval(secs => 1 / (rate_per_s * fleet_provider_factor(r, t, recovery_per_s)));
    start := greatest(t, r.next_slot_at, r.paused_until);
    UPDATE provider_rates SET next_slot_at = start + spacing * slots WHERE provider = p;
    waits_ms := ARRAY(SELECT extract(epoch FROM start + spacing * i - t)::double precision * 1000
                      FROM generate_series(0, slots - 1) AS i ORDER BY i);
    deferred_ms := 0;
END;
$$;

REVOKE ALL ON FUNCTION fleet_reserve_intake_slots(text, double precision, integer, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_reserve_intake_slots(text, double precision, integer, double precision, double precision)
    TO fleet_prepare, fleet_api;
-- A lookup's 429 pauses the shared schedule like any other.
GRANT EXECUTE ON FUNCTION fleet_provider_throttled(text, double precision, double precision, double precision, double precision)
    TO fleet_prepare, fleet_api;
GRANT SELECT ON provider_rates TO fleet_prepare, fleet_api;
