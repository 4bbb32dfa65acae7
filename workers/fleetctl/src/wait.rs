//! `fleetctl wait OP --for decision|final`: long-polls the API (`?wait_for=`, at most 60 s a
//! request, the API's bound) until the operation is where it was awaited, it is escalated
//! to a person instead, or `--timeout` runs out. Each ending has its exit status, so a
//! script can tell them apart; a refusal to be retried (429, 503) is retried after
//! `Retry-After` within the same timeout.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use fleet_core::{OperationView, WaitFor, WaitOver};

use crate::api_client::{Answer, ApiClient};
use crate::args::Format;
use crate::refusal::Refusal;

/// The longest one request waits (the API refuses more).
const MAX_WAIT_PER_REQUEST_S: u64 = 60;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    /// The operation is where it was awaited.
    Reached,
    /// It was escalated to an operator first: it waits for a person now.
    Escalated,
    /// `--timeout` ran out.
    TimedOut,
}

impl WaitEnd {
    /// The process's exit status (1 is any error, as for every command).
    pub fn exit_status(self) -> u8 {
        match self {
            WaitEnd::Reached => 0,
            WaitEnd::TimedOut => 2,
            WaitEnd::Escalated => 3,
        }
    }
}

/// Whether the view `v` ends a wait for `wait_for`, by the API's own rule
/// (`fleet_core::WaitState`).
pub fn judge(wait_for: WaitFor, v: &OperationView) -> Option<WaitEnd> {
    Some(match v.wait_state().over(wait_for)? {
        WaitOver::Reached => WaitEnd::Reached,
        WaitOver::Escalated => WaitEnd::Escalated,
    })
}

/// `90`, `90s`, `10m`, `2h`: a whole number of seconds, minutes or hours, 0 to 24 hours.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = digits.parse().map_err(|_| {
        format!("{s:?} is not a duration: a whole number and s, m or h (90s, 10m, 2h)")
    })?;
    let seconds = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        _ => return Err(format!("{s:?}: the unit is s, m or h")),
    };
    if seconds > 86_400 {
        return Err(format!("{s:?} is longer than 24h"));
    }
    Ok(Duration::from_secs(seconds))
}

/// Waits, prints the last view (`-o json`: as the API sent it) and says how it ended.
pub async fn run(
    client: &ApiClient,
    op: &str,
    wait_for: WaitFor,
    timeout: Duration,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let (answer, end) = wait(client, op, wait_for, timeout).await?;
    crate::inspect::print_view(&answer, format)?;
    let v = answer.view()?;
    let state = format!("{op} is {} (approval {})", v.status, v.approval_status);
    // On stderr, so that `-o json` keeps stdout to the view alone.
    let said = match end {
        WaitEnd::Reached => format!("reached {}: {state}", wait_for.as_str()),
        WaitEnd::Escalated => format!(
            "escalated before reaching {}: {state}; an operator settles it",
            wait_for.as_str()
        ),
        WaitEnd::TimedOut => format!(
            "timed out after {}s waiting for {}: {state}",
            timeout.as_secs(),
            wait_for.as_str()
        ),
    };
    eprintln!("{}", fleet_core::visible::reveal(&said));
    Ok(ExitCode::from(end.exit_status()))
}

/// The last view and how the wait ended.
pub async fn wait(
    client: &ApiClient,
    op: &str,
    wait_for: WaitFor,
    timeout: Duration,
) -> anyhow::Result<(Answer, WaitEnd)> {
    let deadline = Instant::now() + timeout;
    let mut last: Option<Answer> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // Whole seconds rounded down: the API never holds a request past the deadline.
        let this_time = left.as_secs().min(MAX_WAIT_PER_REQUEST_S);
        match client.wait(op, wait_for, this_time).await {
            Ok(answer) => {
                if let Some(end) = judge(wait_for, &answer.view()?) {
                    return Ok((answer, end));
                }
                last = Some(answer);
            }
            Err(e) => {
                let Some(refusal) = e.downcast_ref::<Refusal>().filter(|r| r.is_retryable()) else {
                    return Err(e);
                };
                let pause = refusal.retry_after.unwrap_or(Duration::from_secs(1));
                if Instant::now() + pause >= deadline {
                    return Err(e);
                }
                tokio::time::sleep(pause).await;
            }
        }
        if Instant::now() >= deadline || this_time == 0 {
            if let Some(answer) = last.take() {
                return Ok((answer, WaitEnd::TimedOut));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_core::{ApprovalStatus, Status};

    fn v(status: &str, approval: &str, escalated: bool) -> OperationView {
        OperationView {
            status: Status::parse(status).unwrap(),
            approval_status: ApprovalStatus::parse(approval).unwrap(),
            escalated,
            ..fleet_core::view::example()
        }
    }

    #[test]
    fn each_wait_ends_where_it_should() {
        use WaitFor::{Decision, Final};
        assert_eq!(judge(Decision, &v("not_started", "pending", false)), None);
        assert_eq!(
            judge(Decision, &v("not_started", "approved", false)),
            Some(WaitEnd::Reached)
        );
        assert_eq!(
            judge(Decision, &v("cancelled", "pending", false)),
            Some(WaitEnd::Reached)
        );
        assert_eq!(judge(Final, &v("in_progress", "approved", false)), None);
        assert_eq!(
            judge(Final, &v("succeeded", "approved", false)),
            Some(WaitEnd::Reached)
        );
        assert_eq!(
            judge(Final, &v("unknown", "approved", true)),
            Some(WaitEnd::Escalated)
        );
        // Escalated and final: it is final.
        assert_eq!(
            judge(Final, &v("succeeded", "approved", true)),
            Some(WaitEnd::Reached)
        );
    }

    #[test]
    fn timeouts_are_seconds_minutes_or_hours() {
        assert_eq!(parse_timeout("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_timeout("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_timeout("0"), Ok(Duration::ZERO));
        for bad in ["", "m", "1.5m", "3d", "25h", "-1"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn exit_statuses_tell_the_endings_apart() {
        assert_eq!(
            [WaitEnd::Reached, WaitEnd::TimedOut, WaitEnd::Escalated].map(WaitEnd::exit_status),
            [0, 2, 3]
        );
    }
}
