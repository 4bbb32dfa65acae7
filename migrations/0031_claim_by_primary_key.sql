-- No index on `operations` has `status` as a plain column any more.
--
-- Every compare-and-set on `operations` binds its statuses as parameters and is planned
-- generically (see `shared/store/src/rows.rs`), so a partial index on a status can never
-- serve it and the primary key is the one index left that answers it. The plain
-- `(status, created_at)` index broke that: on a table without statistics (a fresh
-- deployment's first burst) the planner guessed `status = $n` to be selective and
-- planned the execute worker's batch claim as a bitmap scan of every `not_started` entry
-- joined by hash, for each batch: about half of Postgres's CPU in the execute phase with
-- a backlog of a few thousand approved rows.
--
-- What it served is served otherwise: the fleet-wide list (newest first, optionally of one
-- status) reads `operations_created` backwards; the sweeper's and the gauges' counts of a
-- status read the partial indexes on that status, with a literal.
DROP INDEX operations_status_created;
CREATE INDEX operations_created ON operations (created_at DESC, operation_id DESC);

-- The gauges count escalated rows still waiting for a person: read through the escalated
-- rows alone, so the count costs the same with a million rows of history as with none.
CREATE INDEX operations_escalated ON operations (escalated_at) WHERE escalated_at IS NOT NULL;
