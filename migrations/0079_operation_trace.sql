-- The trace an operation belongs to: the W3C `traceparent` of the intake that stored it
-- (the caller's own trace, continued with the intake's span, or a trace the intake
-- started when the caller gave none or a malformed one). Written once, with the snapshot,
-- in the intake's own insert; every later component (execute, reconcile, webhook-ingest,
-- the relay) reads it and continues the same trace with a span of its own, so the
-- provider request, the doorbells and the outcome events of one intent share one trace id.
--
-- Only a well-formed version-00 value can be stored: what is carried on to providers and
-- subscribers is never anything an agent typed.

ALTER TABLE operations ADD COLUMN trace_parent text
    CONSTRAINT operations_trace_parent_w3c
    CHECK (trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
           AND trace_parent !~ '^00-0{32}-' AND trace_parent !~ '^00-[0-9a-f]{32}-0{16}-');

-- Intake alone writes it (prepare, and the API's intake running the same code).
GRANT INSERT (trace_parent) ON operations TO fleet_api, fleet_prepare;

-- The relay publishes the outcome events of an operation under its trace; it reads that
-- column and the key that finds it, nothing else of the operation.
GRANT SELECT (operation_id, tenant_id, trace_parent) ON operations TO fleet_relay;
