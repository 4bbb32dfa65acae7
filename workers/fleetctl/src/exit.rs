//! How fleetctl ends: an exit status a script can branch on, and the error said once, on
//! stderr, without a backtrace.
//!
//! A script needs to tell "ask again later" from "this will never work" from "it is not
//! there": one status for every error would make it parse the message. The statuses are
//! documented in docs/operations.md#exit-statuses; `wait`'s own endings (2 timed out, 3
//! escalated) are its own and never given to an error.

use std::process::ExitCode;

use crate::refusal::Refusal;

/// Why a command failed, as its exit status says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Any other error (a file that cannot be read, an answer that is not JSON, …).
    Error,
    /// The API refused the request as it was (400, 401, 403, 422, other 4xx): asking
    /// again the same way gets the same answer.
    Refused,
    /// What was named does not exist, or not among the caller's tenants (404).
    NotFound,
    /// The request conflicts with the operation's state (409: a hash that is not the
    /// stored one, a decision already taken).
    Conflict,
    /// Nothing was decided and asking again later may work: 429, 502–504 after the
    /// command's own patience, or the API, database or broker could not be reached.
    Unavailable,
    /// The command line itself is wrong (clap's usage errors).
    Usage,
}

impl Exit {
    pub fn status(self) -> u8 {
        match self {
            Exit::Error => 1,
            Exit::Refused => 4,
            Exit::NotFound => 5,
            Exit::Conflict => 6,
            Exit::Unavailable => 7,
            // sysexits' EX_USAGE: clap's own 2 would be `wait`'s "timed out".
            Exit::Usage => 64,
        }
    }

    /// The status for an HTTP refusal's status code.
    pub fn of_http(status: u16) -> Exit {
        match status {
            404 => Exit::NotFound,
            409 => Exit::Conflict,
            429 | 502..=504 => Exit::Unavailable,
            400..=499 => Exit::Refused,
            _ => Exit::Error,
        }
    }

    /// The status `error` calls for: the first cause in its chain that says one.
    pub fn of(error: &anyhow::Error) -> Exit {
        error
            .chain()
            .find_map(|cause| {
                if let Some(refusal) = cause.downcast_ref::<Refusal>() {
                    return Some(Exit::of_http(refusal.status));
                }
                if cause.downcast_ref::<NotFound>().is_some() {
                    return Some(Exit::NotFound);
                }
                if let Some(e) = cause.downcast_ref::<reqwest::Error>() {
                    return (e.is_connect() || e.is_timeout()).then_some(Exit::Unavailable);
                }
                if let Some(e) = cause.downcast_ref::<fleet_store::StoreError>() {
                    return unreachable_store(e).then_some(Exit::Unavailable);
                }
                None
            })
            .unwrap_or(Exit::Error)
    }
}

/// A store error that says the database could not be reached or went away, rather than
/// that it refused something.
fn unreachable_store(e: &fleet_store::StoreError) -> bool {
    match e {
        fleet_store::StoreError::Pool(_) => true,
        fleet_store::StoreError::Db(db) => db.as_db_error().is_none(),
        _ => false,
    }
}

/// Something named on the command line that is not there (`no operation op_…`).
#[derive(Debug)]
pub struct NotFound(pub String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFound {}

/// Says `error` on stderr, its causes below it, and gives its exit status. Never a
/// backtrace: an expected refusal is not a crash, whatever `RUST_BACKTRACE` says.
pub fn report(error: &anyhow::Error) -> ExitCode {
    eprintln!("Error: {error}");
    let causes: Vec<String> = error.chain().skip(1).map(|c| c.to_string()).collect();
    if !causes.is_empty() {
        eprintln!("\nCaused by:");
        for (i, cause) in causes.iter().enumerate() {
            eprintln!("    {i}: {cause}");
        }
    }
    ExitCode::from(Exit::of(error).status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_refusals_map_to_their_statuses() {
        let statuses = [400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504];
        assert_eq!(
            statuses.map(|s| Exit::of_http(s).status()),
            [4, 4, 4, 5, 6, 4, 7, 1, 7, 7, 7]
        );
    }

    #[test]
    fn the_first_cause_that_says_a_status_decides_it() {
        let refusal = Refusal::read("show op_1", 404, &serde_json::Value::Null, None);
        let error = anyhow::Error::new(refusal).context("reading op_1");
        assert_eq!(Exit::of(&error), Exit::NotFound);
        let missing = anyhow::Error::new(NotFound("no operation op_1".into()));
        assert_eq!(Exit::of(&missing), Exit::NotFound);
        assert_eq!(Exit::of(&anyhow::anyhow!("no such file")), Exit::Error);
    }

    #[test]
    fn no_error_status_is_one_of_waits_endings() {
        for exit in [
            Exit::Error,
            Exit::Refused,
            Exit::NotFound,
            Exit::Conflict,
            Exit::Unavailable,
            Exit::Usage,
        ] {
            assert!(![0, 2, 3].contains(&exit.status()), "{exit:?}");
        }
    }
}
