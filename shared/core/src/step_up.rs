//! The step-up an approval page asks for above the policy's threshold: the policy's
//! threshold is where it asks for more than one approver (a band of larger amounts), and
//! there one click is not enough. Where the policy also asks for signed approvals, the
//! passkey's ceremony (PIN, fingerprint) over the statement is the step-up; otherwise the
//! approver re-types the amount they approve. Pure: the operation's requirements are
//! inputs.

/// What an approval must add to the click.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepUp {
    /// Below the threshold: the click on the snapshot shown.
    None,
    /// Re-type the amount (`wording::amount_confirmed` checks it).
    RetypeAmount,
    /// Sign the statement with a passkey or a registered key.
    Signature,
}

impl StepUp {
    /// For an operation that needs `approvals_required` approvers, `signatures_required`
    /// of them signed, of an action that carries an amount (`has_amount`) or not.
    pub fn of(approvals_required: i64, signatures_required: i16, has_amount: bool) -> StepUp {
        if signatures_required > 0 {
            StepUp::Signature
        } else if approvals_required > 1 && has_amount {
            StepUp::RetypeAmount
        } else {
            StepUp::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_the_threshold_one_click_is_not_enough() {
        assert_eq!(StepUp::of(1, 0, true), StepUp::None);
        assert_eq!(StepUp::of(2, 0, true), StepUp::RetypeAmount);
        assert_eq!(StepUp::of(2, 2, true), StepUp::Signature);
        assert_eq!(StepUp::of(1, 1, false), StepUp::Signature);
        // Nothing to re-type: the second approver is the policy's answer.
        assert_eq!(StepUp::of(2, 0, false), StepUp::None);
    }
}
