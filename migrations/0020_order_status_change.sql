-- order.status.change joins the catalogue: its operations are admitted, and a transition
-- whose `from` precondition the orders provider refused (409 status_conflict) is an
-- attempt outcome of its own, as a deal's version conflict is.
ALTER TABLE operations DROP CONSTRAINT operations_action_check;
ALTER TABLE operations ADD CONSTRAINT operations_action_check
    CHECK (action IN ('payment.create', 'refund.create', 'crm.deal.create', 'crm.deal.update', 'order.status.change'));

ALTER TABLE attempts DROP CONSTRAINT attempts_outcome_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_outcome_check
    CHECK (outcome IN ('succeeded', 'failed', 'accepted', 'not_executed', 'unknown', 'version_conflict', 'status_conflict'));
