//! W3C Trace Context (`traceparent`): which trace an operation belongs to, read strictly at
//! every door and carried by everything the fleet sends about the operation afterwards
//! (doorbells, the provider request, the outcome events), so that what happened to one
//! intent can be found under one trace id in the logs and in a tracing backend.
//!
//! Only version `00` is understood: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`,
//! lower-case hex, neither id all zeros. Anything else is not a trace context at all: the
//! door starts a new trace instead of refusing the request (a caller's tracing must never
//! cost it its side effect).
//!
//! The ids themselves are made by the caller from random bytes ([`TraceParent::new_trace`],
//! [`TraceParent::hop`]), so this module stays free of a random source.

use std::fmt;

use sha2::{Digest, Sha256};

/// The `traceparent` header (HTTP) and message header (AMQP) name.
pub const HEADER: &str = "traceparent";
/// The `tracestate` header name: vendor data that travels with a `traceparent`.
pub const STATE_HEADER: &str = "tracestate";
/// The longest `tracestate` kept (the specification's limit for a list a vendor must
/// propagate is 512 characters).
pub const MAX_STATE_CHARS: usize = 512;

/// The `sampled` flag: the caller records this trace.
const SAMPLED: u8 = 0x01;

/// One hop of a trace: the trace id, the id of the span that is the parent of whatever is
/// done next, and the trace flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// Reads a `traceparent` value strictly (see the module docs); `None` when it is not
    /// a well-formed version-00 value.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let b = value.as_bytes();
        if b.len() != 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        if &b[..2] != b"00" {
            return None;
        }
        let trace_id: [u8; 16] = lower_hex(&b[3..35])?.try_into().ok()?;
        let parent_id: [u8; 8] = lower_hex(&b[36..52])?.try_into().ok()?;
        let flags = lower_hex(&b[53..55])?[0];
        TraceParent::of(trace_id, parent_id, flags)
    }

    /// A context from its parts; `None` when either id is all zeros (invalid by the
    /// specification).
    pub fn of(trace_id: [u8; 16], parent_id: [u8; 8], flags: u8) -> Option<TraceParent> {
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// A new trace, started here, sampled: `random` supplies the trace id (16 bytes) and
    /// the span id (8 bytes). All-zero bytes (never seen from a real random source) are
    /// replaced so the result is always valid.
    pub fn new_trace(random: [u8; 24]) -> TraceParent {
        let mut trace_id: [u8; 16] = random[..16].try_into().expect("16 bytes");
        let mut span_id: [u8; 8] = random[16..].try_into().expect("8 bytes");
        if trace_id == [0; 16] {
            trace_id[15] = 1;
        }
        if span_id == [0; 8] {
            span_id[7] = 1;
        }
        TraceParent {
            trace_id,
            parent_id: span_id,
            flags: SAMPLED,
        }
    }

    /// The next hop of the same trace: same trace id and flags, the span id `span_id`
    /// (made non-zero if it is not).
    pub fn hop(&self, mut span_id: [u8; 8]) -> TraceParent {
        if span_id == [0; 8] {
            span_id[7] = 1;
        }
        TraceParent {
            parent_id: span_id,
            ..*self
        }
    }

    /// The hop of the same trace whose span id is derived from `name` (the first 8 bytes of
    /// SHA-256 over the trace id and `name`): the same message published again carries the
    /// very same context, so a repeat is byte for byte the first copy.
    pub fn named_hop(&self, name: &str) -> TraceParent {
        let digest = Sha256::new()
            .chain_update(self.trace_id)
            .chain_update(name.as_bytes())
            .finalize();
        self.hop(digest[..8].try_into().expect("8 bytes"))
    }

    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    pub fn span_id(&self) -> [u8; 8] {
        self.parent_id
    }

    pub fn flags(&self) -> u8 {
        self.flags
    }

    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The trace id as 32 lower-case hex digits (what log lines and backends show).
    pub fn trace_id_hex(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// The span id as 16 lower-case hex digits.
    pub fn span_id_hex(&self) -> String {
        hex::encode(self.parent_id)
    }
}

impl fmt::Display for TraceParent {
    /// The `traceparent` value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            self.trace_id_hex(),
            self.span_id_hex(),
            self.flags
        )
    }
}

/// A `tracestate` value worth passing on: at most [`MAX_STATE_CHARS`] printable ASCII
/// characters (its list syntax is the vendors' business; the fleet only carries it).
/// `None` for anything else, which is dropped, never refused.
pub fn trace_state(value: &str) -> Option<&str> {
    let value = value.trim();
    let printable = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    (!value.is_empty() && value.len() <= MAX_STATE_CHARS && printable).then_some(value)
}

/// Lower-case hex digits to bytes; `None` for anything else (upper case included, as the
/// specification requires).
fn lower_hex(digits: &[u8]) -> Option<Vec<u8>> {
    if !digits
        .iter()
        .all(|d| d.is_ascii_digit() || (b'a'..=b'f').contains(d))
    {
        return None;
    }
    hex::decode(digits).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_well_formed_value_reads_back_as_written() {
        let tp = TraceParent::parse(GOOD).unwrap();
        assert_eq!(tp.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.span_id_hex(), "00f067aa0ba902b7");
        assert!(tp.sampled());
        assert_eq!(tp.to_string(), GOOD);
        let unsampled = GOOD.replace("-01", "-00");
        assert!(!TraceParent::parse(&unsampled).unwrap().sampled());
    }

    #[test]
    fn anything_else_is_no_trace_context() {
        let bad = [
            "",
            "garbage",
            // another version, and the forbidden one
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // all-zero ids
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // upper case, non-hex, wrong lengths, wrong separators, trailing data
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        ];
        for value in bad {
            assert_eq!(TraceParent::parse(value), None, "{value:?}");
        }
    }

    #[test]
    fn a_hop_keeps_the_trace_and_changes_the_span() {
        let tp = TraceParent::parse(GOOD).unwrap();
        let next = tp.hop([7; 8]);
        assert_eq!(next.trace_id(), tp.trace_id());
        assert_eq!(next.flags(), tp.flags());
        assert_eq!(next.span_id_hex(), "0707070707070707");
        assert_eq!(tp.hop([0; 8]).span_id(), [0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn a_named_hop_is_the_same_for_the_same_name_and_differs_by_name() {
        let tp = TraceParent::parse(GOOD).unwrap();
        let a = tp.named_hop("k.op_1.1");
        assert_eq!(a, tp.named_hop("k.op_1.1"));
        assert_ne!(a.span_id(), tp.named_hop("k.op_1.2").span_id());
        assert_ne!(a.span_id(), tp.span_id());
        assert_eq!(a.trace_id(), tp.trace_id());
    }

    #[test]
    fn a_new_trace_is_always_valid_and_sampled() {
        let tp = TraceParent::new_trace([0; 24]);
        assert!(TraceParent::parse(&tp.to_string()).is_some());
        assert!(tp.sampled());
        let tp = TraceParent::new_trace([9; 24]);
        assert_eq!(tp.trace_id(), [9; 16]);
        assert_eq!(tp.span_id(), [9; 8]);
    }

    #[test]
    fn trace_state_is_carried_only_when_printable_and_bounded() {
        assert_eq!(
            trace_state(" congo=t61rcWkgMzE "),
            Some("congo=t61rcWkgMzE")
        );
        assert_eq!(trace_state(""), None);
        assert_eq!(trace_state("a=\u{1b}b"), None);
        assert_eq!(trace_state(&"a".repeat(MAX_STATE_CHARS + 1)), None);
    }
}
