//! How long an intent waits, parked on the queue, for a provider's directory of payees
//! that gives no answer (429, 5xx, a timeout): a transient silence never refuses the
//! intent, but an endless one must end. Each wait grows with the time already waited
//! (half of it, from [`FIRST_WAIT`] to [`LONGEST_WAIT`]), so a directory down for long
//! is asked ever less often and nothing spins; the last wait ends at the deadline, and
//! the delivery after it is refused `payee_directory_unreachable`.

use std::time::Duration;

/// The first wait after a lookup that gave no answer.
pub const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest single wait.
pub const LONGEST_WAIT: Duration = Duration::from_secs(30);
/// The deadline when none is configured (`PREPARE_PAYEE_LOOKUP_DEADLINE_S`).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(900);

/// What becomes of an intent whose payee's directory gave no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectoryWait {
    /// Park it this long, then look again.
    Park(Duration),
    /// It waited until the deadline: refuse it.
    GiveUp,
}

/// The fate of an intent that has waited `waited` so far (zero on its first failure),
/// under `deadline`.
pub fn directory_wait(waited: Duration, deadline: Duration) -> DirectoryWait {
    if waited >= deadline {
        return DirectoryWait::GiveUp;
    }
    let grown = (waited / 2).clamp(FIRST_WAIT, LONGEST_WAIT);
    DirectoryWait::Park(grown.min(deadline - waited))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn waits_grow_with_the_time_waited_and_stay_bounded() {
        assert_eq!(directory_wait(S(0), S(900)), DirectoryWait::Park(S(1)));
        assert_eq!(directory_wait(S(10), S(900)), DirectoryWait::Park(S(5)));
        assert_eq!(directory_wait(S(500), S(900)), DirectoryWait::Park(S(30)));
    }

    #[test]
    fn the_last_wait_ends_at_the_deadline_and_the_next_delivery_gives_up() {
        assert_eq!(directory_wait(S(880), S(900)), DirectoryWait::Park(S(20)));
        assert_eq!(directory_wait(S(900), S(900)), DirectoryWait::GiveUp);
        assert_eq!(directory_wait(S(5000), S(900)), DirectoryWait::GiveUp);
        assert_eq!(directory_wait(S(0), S(0)), DirectoryWait::GiveUp);
    }

    #[test]
    fn a_total_of_waits_never_spins() {
        // From the first failure to the deadline: a bounded number of looks.
        let (mut waited, mut looks) = (S(0), 0);
        while let DirectoryWait::Park(d) = directory_wait(waited, S(900)) {
            assert!(d >= Duration::from_millis(1));
            waited += d;
            looks += 1;
        }
        assert!(looks < 60, "{looks} looks in 900 s");
    }
}
