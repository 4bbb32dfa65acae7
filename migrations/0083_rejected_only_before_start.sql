-- A rejection, held by the database whoever writes: the approval status becomes
-- `rejected` only in the move that cancels an operation that has not started, is not
-- escalated, and whose approval is pending or approved — the one case
-- `fleet_core::rejection::judge_reject` answers `Reject`, and the row it leaves
-- (`cancelled`, `rejected`).
--
-- Until now the approval moves (0040, 0055) did not look at the status, and the state
-- table lets workers cancel a row in progress (a version conflict) and cancel an
-- unstarted one; so a role allowed to write the approval columns could cancel and reject
-- a row while its provider call was in flight, an escalated row waiting for an operator,
-- or a row already cancelled. Only the store, asking `judge_reject`, kept a rejection to
-- an unstarted, unescalated row. Nothing else writes `rejected`: expiry writes `expired`,
-- voided approvals and mandates move between `pending` and `approved`, operators' and
-- workers' cancellations leave the approval status as it is; all of them are untouched.
--
-- A separate trigger beside `operations_approval_moves`, so that function stays as 0055
-- left it. Refused as a move the approval rule does not allow: 23514, constraint
-- `operations_approval_transition`.
CREATE FUNCTION operations_rejected_only_before_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.approval_status = 'rejected' AND OLD.approval_status IS DISTINCT FROM 'rejected'
       AND NOT (OLD.status = 'not_started' AND NEW.status = 'cancelled'
                AND OLD.escalated_at IS NULL AND NEW.escalated_at IS NULL
                AND OLD.approval_status IN ('pending', 'approved')) THEN
        RAISE EXCEPTION 'operation %: rejected only by cancelling an unstarted, unescalated operation (% %, escalated: %, → %)',
                OLD.operation_id, OLD.status, OLD.approval_status, OLD.escalated_at IS NOT NULL, NEW.status
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_approval_transition',
                  HINT = 'a row that started, is escalated or is final is out of an approver''s hands';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_rejected_only_before_start
    BEFORE UPDATE OF approval_status ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_rejected_only_before_start();
