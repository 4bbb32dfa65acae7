//! `get_operation` and `list_operations`: the HTTP routes' reads (the same functions, the
//! same waiters, the same tenant scoping), as tools. A view is `operation_view`'s,
//! unchanged; `get_operation` adds one sentence saying what the view means for the agent,
//! above all that `unknown` and `escalated` are not failures.

use std::time::Duration;

use fleet_core::{ApiAction, ApprovalStatus, OperationView, Status, WaitFor};
use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::answers::{answer, bad_arguments, refusal};
use crate::auth::Caller;
use crate::decisions::Addressed;
use crate::operations::{
    list_page, read_view, view_filter, Wait, DEFAULT_PAGE, DEFAULT_WAIT_S, MAX_PAGE, MAX_WAIT_S,
};
use crate::request_slots::HeldSlot;
use crate::state::AppState;

/// What `get_operation` waits for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum WaitForArg {
    /// Until a person approved or rejected it, or the approval expired.
    Decision,
    /// Until it succeeded, failed, was cancelled or disputed.
    Final,
}

/// The arguments of `get_operation`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetOperationArgs {
    /// The id a proposal tool answered with (`op_…`).
    pub operation_id: String,
    /// The operation's tenant: needed only when two of the caller's tenants hold the id
    /// (ids are unique per tenant).
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// Wait before answering: for the approval's decision, or for the end. Either wait
    /// also ends when the operation is escalated to a person.
    #[serde(default)]
    pub wait_for: Option<WaitForArg>,
    /// The longest to wait, in seconds (0 to 60, default 30); no effect without
    /// `wait_for`. When it runs out the answer is the operation as it is then: look at it,
    /// and call again.
    #[serde(default)]
    #[schemars(range(max = 60))]
    pub timeout_s: Option<u64>,
}

/// The arguments of `list_operations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListOperationsArgs {
    /// Only operations in this status: not_started, in_progress, accepted, unknown,
    /// succeeded, failed, cancelled, disputed.
    #[serde(default)]
    pub status: Option<String>,
    /// Only operations whose approval is pending, approved, rejected or expired.
    #[serde(default)]
    pub approval_status: Option<String>,
    /// Page size, 1 to 100 (default 50).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The arguments read as `T`, or the refusal naming the member at fault.
pub(super) fn parse<T: for<'de> Deserialize<'de>>(
    arguments: Map<String, Value>,
) -> Result<T, CallToolResult> {
    fleet_core::member_path::read(&Value::Object(arguments))
        .map_err(|refused| bad_arguments(refused.path.unwrap_or_else(|| "arguments".to_owned())))
}

/// The arguments of a tool that reads, as `T`, once the caller's role may read
/// operations; or the refusal: the role's first, then the member at fault.
pub(super) fn read_args<T: for<'de> Deserialize<'de>>(
    caller: &Caller,
    arguments: Map<String, Value>,
) -> Result<T, CallToolResult> {
    caller
        .may(ApiAction::ReadOperations)
        .map_err(|e| refusal(&e))?;
    parse(arguments)
}

/// `get_operation`. `cancelled` is the call's own token: a client that gives up (or goes
/// away) withdraws its wait at once rather than holding a waiter's place until the timeout.
pub async fn get_operation(
    state: &AppState,
    caller: &Caller,
    held: Option<&HeldSlot>,
    arguments: Map<String, Value>,
    cancelled: CancellationToken,
) -> CallToolResult {
    let args = match read_args::<GetOperationArgs>(caller, arguments) {
        Ok(args) => args,
        Err(refused) => return refused,
    };
    let timeout_s = match (args.wait_for, args.timeout_s) {
        (_, Some(t)) if t > MAX_WAIT_S => return bad_arguments("timeout_s"),
        (_, t) => t.unwrap_or(DEFAULT_WAIT_S),
    };
    let wait_for = args.wait_for.map(|w| match w {
        WaitForArg::Decision => WaitFor::Decision,
        WaitForArg::Final => WaitFor::Final,
    });
    let wait = Wait {
        wait_for,
        timeout: Duration::from_secs(timeout_s),
    };
    let at = Addressed::new(&args.operation_id, args.tenant_id.as_deref());
    let read = read_view(state, &caller.0, held, at, wait);
    let view = tokio::select! {
        view = read => view,
        // Nobody reads this answer: the call was withdrawn.
        _ = cancelled.cancelled() => return CallToolResult::error(Vec::new()),
    };
    match view {
        Ok(view) => {
            let note = reading(&view);
            answer(view.to_json(), Some(note))
        }
        Err(e) => refusal(&e),
    }
}

/// `list_operations`.
pub async fn list_operations(
    state: &AppState,
    caller: &Caller,
    arguments: Map<String, Value>,
) -> CallToolResult {
    let args = match read_args::<ListOperationsArgs>(caller, arguments) {
        Ok(args) => args,
        Err(refused) => return refused,
    };
    let limit = args.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return bad_arguments("limit");
    }
    let page = match view_filter(args.status.as_deref(), args.approval_status.as_deref()) {
        Ok(filter) => {
            list_page(
                state,
                &caller.0.tenants,
                filter,
                limit,
                args.cursor.as_deref(),
            )
            .await
        }
        Err(e) => Err(e),
    };
    match page {
        Ok(page) => answer(page, None),
        Err(e) => refusal(&e),
    }
}

/// What a view means for the agent that proposed it, in one sentence.
pub fn reading(view: &OperationView) -> String {
    let text = |member: &Option<String>| member.clone().unwrap_or_default();
    if view.escalated {
        return "Escalated: a person (an operator) is settling this operation. It is not a failure: \
                do not propose it again; look again later."
            .to_owned();
    }
    match (view.approval_status, view.status) {
        (ApprovalStatus::Pending, _) => format!(
            "Waiting for a person to approve it (until {}). Nothing has happened yet.",
            view.approval_expires_at
        ),
        (ApprovalStatus::Rejected, _) => format!(
            "A person rejected it ({}); nothing was or will be done.",
            text(&view.decided_by)
        ),
        (ApprovalStatus::Expired, _) => {
            "Nobody approved it in time; nothing was or will be done.".to_owned()
        }
        (ApprovalStatus::Approved, Status::NotStarted) => {
            "Approved; waiting to be executed.".to_owned()
        }
        (ApprovalStatus::Approved, Status::InProgress) => {
            "Approved; being executed now.".to_owned()
        }
        (ApprovalStatus::Approved, Status::Accepted) => {
            "The provider accepted it and will report the final result; wait for it.".to_owned()
        }
        (ApprovalStatus::Approved, Status::Unknown) => {
            "Unknown: the provider's answer was lost (a timeout, a crash). It is not a failure: fleet \
             is finding out whether it happened. Do not propose it again; wait for the final status."
                .to_owned()
        }
        (ApprovalStatus::Approved, Status::Succeeded) => format!(
            "Succeeded: the provider holds the effect ({}).",
            text(&view.external_id)
        ),
        (ApprovalStatus::Approved, Status::Failed) => {
            let code = text(&view.error_code);
            match fleet_core::stripe::charge::failure_in_words(&code) {
                Some(words) => {
                    format!("Failed: the provider refused it ({code}: {words}); nothing happened.")
                }
                None => format!("Failed: the provider refused it ({code}); nothing happened."),
            }
        }
        (ApprovalStatus::Approved, Status::Cancelled) => {
            format!("Cancelled ({}); nothing happened.", text(&view.reason))
        }
        (ApprovalStatus::Approved, Status::Disputed) => {
            "Disputed after the fact; a person is handling it.".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use fleet_core::view::example;

    use super::*;

    fn view(status: Status, approval: ApprovalStatus, escalated: bool) -> OperationView {
        OperationView {
            status,
            approval_status: approval,
            escalated,
            external_id: Some("pay_1".to_owned()),
            ..example()
        }
    }

    #[test]
    fn unknown_and_escalated_are_never_read_as_failures() {
        let unknown = view(Status::Unknown, ApprovalStatus::Approved, false);
        assert!(reading(&unknown).contains("not a failure"));
        let escalated = view(Status::Unknown, ApprovalStatus::Approved, true);
        assert!(reading(&escalated).starts_with("Escalated"));
        assert!(reading(&escalated).contains("not a failure"));
        let pending = view(Status::NotStarted, ApprovalStatus::Pending, false);
        assert!(reading(&pending).contains("Nothing has happened yet"));
        assert!(reading(&pending).contains("2026-03-02T09:30:00.000000Z"));
        let done = view(Status::Succeeded, ApprovalStatus::Approved, false);
        assert_eq!(
            reading(&done),
            "Succeeded: the provider holds the effect (pay_1)."
        );
    }
}
