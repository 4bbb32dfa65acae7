-- One request schedule per provider, shared by every replica of the components that call
-- providers (execute, reconcile), so that together they keep to the rate the provider
-- allows (docs/design.md#provider-rates).
--
-- The schedule is a virtual one (GCRA): `next_slot_at` is when the next request may be
-- sent; reserving k slots hands out `start, start + s, …, start + (k-1)·s` with
-- `start = greatest(now, next_slot_at, paused_until)` and the spacing
-- `s = 1 / (rate × factor)`, and moves `next_slot_at` to `start + k·s`. An idle provider
-- starts again from now, with no burst saved up. A 429 pauses the schedule for what its
-- Retry-After asked (every replica's next slots come after it) and lowers `factor`, once
-- per pause; the factor grows back with time since `lowered_at`. The rate itself is each
-- process's setting (`<PROVIDER>_RATE_PER_S`), passed with every reservation; the tuning
-- of the backoff comes from fleet-core (`throttle::BACKOFF`).
--
-- All times are the database clock's (clock_timestamp(): a reservation that waited for the
-- row lock is timed when it got it). Components reach the table only through the two
-- functions below, which bound what they may ask for; they may read it.

CREATE TABLE provider_rates (
    provider text PRIMARY KEY CHECK (provider ~ '^[a-z][a-z0-9_]{0,62}$'),
    next_slot_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    paused_until timestamptz NOT NULL DEFAULT clock_timestamp(),
    factor double precision NOT NULL DEFAULT 1 CHECK (factor > 0 AND factor <= 1),
    lowered_at timestamptz
);

-- The factor in force at `at`: the last cut's value, grown back by `recovery_per_s` a
-- second since, at most 1 (`fleet_core::throttle::Backoff::recovered`).
CREATE FUNCTION fleet_provider_factor(r provider_rates, at timestamptz, recovery_per_s double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN r.lowered_at IS NULL THEN 1
                ELSE least(1, r.factor + recovery_per_s * extract(epoch FROM at - r.lowered_at)::double precision)
           END
$$;

-- The provider's row, created on first use, locked until the caller's statement ends:
-- one reservation or report at a time, in the order they got the lock.
CREATE FUNCTION fleet_lock_provider_rate(p text) RETURNS provider_rates
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
DECLARE
    r provider_rates;
BEGIN
    INSERT INTO provider_rates (provider) VALUES (p) ON CONFLICT (provider) DO NOTHING;
    SELECT * INTO r FROM provider_rates WHERE provider = p FOR UPDATE;
    RETURN r;
END;
$$;

-- Reserves `slots` requests to `p` at `rate_per_s` and answers, in milliseconds from now,
-- when each may be sent, and how much of a pause is left (so that a process holding
-- slots from before the pause learns of it).
CREATE FUNCTION fleet_reserve_provider_slots(
    p text, rate_per_s double precision, slots integer, recovery_per_s double precision,
    OUT waits_ms double precision[], OUT paused_ms double precision)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    t timestamptz;
    r provider_rates;
    spacing interval;
    start timestamptz;
BEGIN
    IF rate_per_s IS NULL OR NOT rate_per_s BETWEEN 0.001 AND 1000000
       OR slots IS NULL OR NOT slots BETWEEN 1 AND 1000
       OR recovery_per_s IS NULL OR NOT recovery_per_s BETWEEN 0 AND 1 THEN
        RAISE EXCEPTION 'a reservation needs a rate, 1 to 1000 slots and a recovery in [0, 1]'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    r := fleet_lock_provider_rate(p);
    t := clock_timestamp();
    spacing := make_interval(secs => 1 / (rate_per_s * fleet_provider_factor(r, t, recovery_per_s)));
    start := greatest(t, r.next_slot_at, r.paused_until);
    UPDATE provider_rates SET next_slot_at = start + spacing * slots WHERE provider = p;
    waits_ms := ARRAY(SELECT extract(epoch FROM start + spacing * i - t)::double precision * 1000
                      FROM generate_series(0, slots - 1) AS i ORDER BY i);
    paused_ms := greatest(0, extract(epoch FROM r.paused_until - t)::double precision * 1000);
END;
$$;

-- `p` answered 429 asking for `retry_after_ms` (at most a minute is honoured): every
-- replica's next slots come after it. The first 429 of a pause also lowers the factor to
-- `cut` times the one in force, not below `floor`; those answered while the pause lasts
-- were sent before anyone knew, and lower nothing more.
CREATE FUNCTION fleet_provider_throttled(
    p text, retry_after_ms double precision, cut double precision, floor double precision,
    recovery_per_s double precision)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    t timestamptz;
    r provider_rates;
BEGIN
    IF retry_after_ms IS NULL OR retry_after_ms < 0
       OR cut IS NULL OR NOT cut BETWEEN 0.05 AND 1
       OR floor IS NULL OR NOT floor BETWEEN 0.01 AND 1
       OR recovery_per_s IS NULL OR NOT recovery_per_s BETWEEN 0 AND 1 THEN
        RAISE EXCEPTION 'a throttle report needs a wait, a cut in [0.05, 1], a floor in [0.01, 1] and a recovery in [0, 1]'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    r := fleet_lock_provider_rate(p);
    t := clock_timestamp();
    IF t >= r.paused_until THEN
        r.factor := greatest(floor, fleet_provider_factor(r, t, recovery_per_s) * cut);
        r.lowered_at := t;
    END IF;
    UPDATE provider_rates
       SET paused_until = greatest(r.paused_until,
                                   t + make_interval(secs => least(retry_after_ms, 60000) / 1000)),
           factor = r.factor, lowered_at = r.lowered_at
     WHERE provider = p;
END;
$$;

REVOKE ALL ON FUNCTION fleet_provider_factor(provider_rates, timestamptz, double precision) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_lock_provider_rate(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_reserve_provider_slots(text, double precision, integer, double precision) FROM PUBLIC;
REVOKE ALL ON FUNCTION fleet_provider_throttled(text, double precision, double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_reserve_provider_slots(text, double precision, integer, double precision)
    TO fleet_execute, fleet_reconcile;
GRANT EXECUTE ON FUNCTION fleet_provider_throttled(text, double precision, double precision, double precision, double precision)
    TO fleet_execute, fleet_reconcile;
GRANT SELECT ON provider_rates TO fleet_execute, fleet_reconcile;
