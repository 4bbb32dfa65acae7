//! Text log lines stay whole: every field value is written with its control characters
//! (CR, LF, ESC, …) and the Unicode line and paragraph separators escaped, so a value a
//! client sent (a path, a header, an error quoting either) can never start a line of its
//! own that reads like a log line, nor move a terminal's cursor. The JSON format needs
//! none of this: JSON strings escape every control character.

use std::fmt::{self, Write};

use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::{debug_fn, Writer};
use tracing_subscriber::fmt::FormatFields;

/// The text format's fields: `message`, then ` name=value` pairs, all escaped.
pub fn escaped_fields() -> impl for<'w> FormatFields<'w> + Send + Sync + 'static {
    debug_fn(
        |writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug| {
            if field.name() != "message" {
                write!(writer, "{}=", field.name())?;
            }
            write!(Escaping(writer), "{value:?}")
        },
    )
    .delimited(" ")
}

/// Writes through, escaping what [`must_escape`] names.
struct Escaping<'a, W: Write>(&'a mut W);

impl<W: Write> Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            match c {
                '\n' => self.0.write_str("\\n")?,
                '\r' => self.0.write_str("\\r")?,
                '\t' => self.0.write_str("\\t")?,
                c if must_escape(c) => write!(self.0, "\\u{{{:x}}}", u32::from(c))?,
                c => self.0.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// Control characters (C0, DEL, C1) and the characters that end a line without being
/// one of them.
fn must_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn escape(s: &str) -> String {
        let mut out = String::new();
        Escaping(&mut out).write_str(s).unwrap();
        out
    }

    #[test]
    fn control_characters_and_line_separators_are_escaped() {
        assert_eq!(escape("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(escape("\u{1b}[2J\u{7}\u{0}"), "\\u{1b}[2J\\u{7}\\u{0}");
        assert_eq!(
            escape("\u{85}\u{2028}\u{2029}"),
            "\\u{85}\\u{2028}\\u{2029}"
        );
        assert_eq!(escape("op_01J /console/é"), "op_01J /console/é");
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_event_with_newlines_in_every_field_is_one_line() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .fmt_fields(escaped_fields())
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let path = "/console/operations/\nfoo\r\n2026-01-01T00:00:00Z  INFO forged";
            tracing::info!(path = %path, quoted = path, "seen {}", path);
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains("path=/console/operations/\\nfoo\\r\\n"),
            "{text}"
        );
        assert!(text.contains("seen /console/operations/\\nfoo"), "{text}");
    }
}
