-- contract.send joins the catalogue: its operations are admitted.
ALTER TABLE operations DROP CONSTRAINT operations_action_check;
ALTER TABLE operations ADD CONSTRAINT operations_action_check
    CHECK (action IN ('payment.create', 'refund.create', 'crm.deal.create', 'crm.deal.update', 'order.status.change', 'contract.send'));
