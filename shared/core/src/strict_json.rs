//! The strict reading every intent gets before it is parsed. JSON text that two
//! conforming parsers may read as different values is refused, so the hash an agent
//! computes with its own JSON library is always the hash fleet computes (the I-JSON
//! profile, RFC 7493):
//!
//! - a member name twice in one object (parsers keep the first, the last, or fail);
//! - an escaped UTF-16 surrogate without its pair (`"\ud800"`: not a Unicode string);
//! - an integer literal beyond ±(2^53 − 1), which doubles cannot hold (JavaScript reads
//!   9007199254740993 as ...992), and a number that overflows a double (`1e400`) or
//!   underflows to zero although its digits are not all zero (`1e-400`);
//! - U+0000 anywhere, which Postgres can store neither in `text` nor in `jsonb`.
//!
//! It is a complete JSON grammar check as well (RFC 8259), in one pass, without
//! recursion, so its cost is linear in the (already size-bounded) input.

use std::collections::HashSet;
use std::fmt;

use crate::refusal::IntakeRefusal;

/// The largest integer every JSON parser reads exactly: IEEE-754 doubles hold every
/// integer up to 2^53 − 1, and several RFC 8785 libraries refuse larger integers.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// A rule of the strict reading that the text breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ambiguity {
    DuplicateMember,
    InvalidUnicode,
    NumberOutOfRange,
    NulCharacter,
}

impl Ambiguity {
    /// The bounded reason code (dead-letter header, metric label, API error code).
    pub fn code(self) -> &'static str {
        match self {
            Ambiguity::DuplicateMember => IntakeRefusal::DuplicateMember.as_str(),
            Ambiguity::InvalidUnicode => IntakeRefusal::InvalidUnicode.as_str(),
            Ambiguity::NumberOutOfRange => IntakeRefusal::NumberOutOfRange.as_str(),
            Ambiguity::NulCharacter => IntakeRefusal::NulCharacter.as_str(),
        }
    }

    /// What the rule refuses, in words (never the offending value).
    pub fn problem(self) -> &'static str {
        match self {
            Ambiguity::DuplicateMember => "member name appears twice in one object",
            Ambiguity::InvalidUnicode => "escaped UTF-16 surrogate without its pair",
            Ambiguity::NumberOutOfRange => {
                "number outside what an IEEE-754 double holds exactly (integers within ±(2^53 − 1))"
            }
            Ambiguity::NulCharacter => "U+0000 is not allowed",
        }
    }
}

/// Why the text was refused. `at` is the member path (`payload.patch.stage`,
/// `payload.tags[2]`); it names fields, never quotes values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrictJsonError {
    #[error("not JSON: {0}")]
    Malformed(String),
    #[error("{at}: {}", kind.problem())]
    Ambiguous { kind: Ambiguity, at: String },
}

/// Checks `text` against the JSON grammar and the strict rules above.
pub fn check_strict(text: &str) -> Result<(), StrictJsonError> {
    let mut r = Reader {
        bytes: text.as_bytes(),
        pos: 0,
        path: Vec::new(),
    };
    let mut open: Vec<Container> = Vec::new();
    r.skip_ws();
    loop {
        // A value; an object or array that opens is followed by its first member's value.
        while r.value(&mut open)? == Read::Opened {}
        // After a value: close every container that ends here, up to the next value.
        loop {
            r.skip_ws();
            match open.last_mut() {
                None if r.pos == r.bytes.len() => return Ok(()),
                None => return Err(r.malformed("text after the JSON value")),
                Some(Container::Object(names)) => match r.next_byte() {
                    Some(b',') => {
                        r.path.pop();
                        r.skip_ws();
                        r.member_name(names)?;
                        break;
                    }
                    Some(b'}') => {
                        r.path.pop();
                        open.pop();
                    }
                    _ => return Err(r.malformed("expected , or } in an object")),
                },
                Some(Container::Array(index)) => match r.next_byte() {
                    Some(b',') => {
                        *index += 1;
                        r.path.pop();
                        r.path.push(Segment::Index(*index));
                        r.skip_ws();
                        break;
                    }
                    Some(b']') => {
                        r.path.pop();
                        open.pop();
                    }
                    _ => return Err(r.malformed("expected , or ] in an array")),
                },
            }
        }
    }
}

/// What reading one value did.
#[derive(PartialEq, Eq)]
enum Read {
    /// A scalar or an empty container: complete.
    Complete,
    /// An object or array opened; its first member's value comes next.
    Opened,
}

/// An open object (the member names seen so far) or array (the current index).
enum Container {
    Object(HashSet<String>),
    Array(usize),
}

enum Segment {
    Member(String),
    Index(usize),
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: Vec<Segment>,
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        while matches!(self.bytes.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn next_byte(&mut self) -> Option<u8> {
        let b = self.bytes.get(self.pos).copied();
        self.pos += usize::from(b.is_some());
        b
    }

    fn malformed(&self, what: &str) -> StrictJsonError {
        StrictJsonError::Malformed(format!("{what} at byte {}", self.pos))
    }

    fn ambiguous(&self, kind: Ambiguity) -> StrictJsonError {
        StrictJsonError::Ambiguous {
            kind,
            at: self.path_text(),
        }
    }

    fn path_text(&self) -> String {
        let mut out = String::new();
        for segment in &self.path {
            match segment {
                Segment::Member(name) if out.is_empty() => out.push_str(name),
                Segment::Member(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        if out.is_empty() {
            out.push_str("(top level)");
        }
        out
    }

    /// Reads one value. An object or array is opened (pushed, with its first member name
    /// read) and left for the caller: nesting never recurses.
    fn value(&mut self, open: &mut Vec<Container>) -> Result<Read, StrictJsonError> {
        match self.bytes.get(self.pos) {
            Some(b'{') => {
                self.pos += 1;
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                    return Ok(Read::Complete);
                }
                let mut names = HashSet::new();
                self.member_name(&mut names)?;
                open.push(Container::Object(names));
                Ok(Read::Opened)
            }
            Some(b'[') => {
                self.pos += 1;
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                    return Ok(Read::Complete);
                }
                open.push(Container::Array(0));
                self.path.push(Segment::Index(0));
                Ok(Read::Opened)
            }
            Some(b'"') => self.string().map(|_| Read::Complete),
            Some(b'-' | b'0'..=b'9') => self.number().map(|()| Read::Complete),
            Some(b't') => self.literal("true"),
            Some(b'f') => self.literal("false"),
            Some(b'n') => self.literal("null"),
            Some(_) => Err(self.malformed("expected a JSON value")),
            None => Err(self.malformed("unexpected end of text")),
        }
    }

    /// Reads `"name" :` and the whitespace after it, refusing a name already in `names`.
    /// The path then ends with this member, until the caller pops it.
    fn member_name(&mut self, names: &mut HashSet<String>) -> Result<(), StrictJsonError> {
        if self.bytes.get(self.pos) != Some(&b'"') {
            return Err(self.malformed("expected a member name"));
        }
        let name = self.string()?;
        self.path.push(Segment::Member(name.clone()));
        if !names.insert(name) {
            return Err(self.ambiguous(Ambiguity::DuplicateMember));
        }
        self.skip_ws();
        if self.next_byte() != Some(b':') {
            return Err(self.malformed("expected : after a member name"));
        }
        self.skip_ws();
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Result<Read, StrictJsonError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(Read::Complete)
        } else {
            Err(self.malformed("invalid literal"))
        }
    }

    /// Reads a string (the cursor is on its opening quote) and returns it unescaped.
    fn string(&mut self) -> Result<String, StrictJsonError> {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.pos;
            // Copy the run of plain bytes at once; the text is valid UTF-8, and runs end
            // only at ASCII bytes, so `out` stays valid UTF-8.
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.extend_from_slice(&self.bytes[start..self.pos]);
            match self.next_byte() {
                Some(b'"') => break,
                Some(b'\\') => self.escape(&mut out)?,
                Some(0) => return Err(self.ambiguous(Ambiguity::NulCharacter)),
                Some(_) => return Err(self.malformed("unescaped control character in a string")),
                None => return Err(self.malformed("unterminated string")),
            }
        }
        Ok(String::from_utf8(out).expect("built from valid UTF-8 and whole characters"))
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), StrictJsonError> {
        let plain = match self.next_byte() {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                let c = self.unicode_escape()?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            _ => return Err(self.malformed("invalid escape")),
        };
        out.push(plain);
        Ok(())
    }

    /// The character of a `\uXXXX` escape (the cursor is after the `u`), joining a
    /// surrogate pair written as two escapes.
    fn unicode_escape(&mut self) -> Result<char, StrictJsonError> {
        let unit = self.hex4()?;
        let code = match unit {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(self.ambiguous(Ambiguity::InvalidUnicode));
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.ambiguous(Ambiguity::InvalidUnicode));
                }
                0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.ambiguous(Ambiguity::InvalidUnicode)),
            0 => return Err(self.ambiguous(Ambiguity::NulCharacter)),
            _ => u32::from(unit),
        };
        Ok(char::from_u32(code).expect("a BMP scalar or a joined surrogate pair"))
    }

    fn hex4(&mut self) -> Result<u16, StrictJsonError> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.malformed("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.malformed("invalid \\u escape"))?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.malformed("invalid \\u escape"));
        }
        self.pos += 4;
        Ok(u16::from_str_radix(text, 16).expect("four hex digits"))
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, then the range rules.
    fn number(&mut self) -> Result<(), StrictJsonError> {
        let start = self.pos;
        self.pos += usize::from(self.bytes[self.pos] == b'-');
        let int_start = self.pos;
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.malformed("invalid number")),
        }
        let int_digits = self.pos - int_start;
        let mut integer = true;
        if self.bytes.get(self.pos) == Some(&b'.') {
            integer = false;
            self.pos += 1;
            self.required_digits()?;
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            integer = false;
            self.pos += 1;
            if matches!(self.bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.required_digits()?;
        }
        let literal = std::str::from_utf8(&self.bytes[start..self.pos]).expect("ASCII");
        if in_range(literal, integer, int_digits) {
            Ok(())
        } else {
            Err(self.ambiguous(Ambiguity::NumberOutOfRange))
        }
    }

    fn digits(&mut self) {
        while matches!(self.bytes.get(self.pos), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }

    fn required_digits(&mut self) -> Result<(), StrictJsonError> {
        let before = self.pos;
        self.digits();
        if self.pos == before {
            return Err(self.malformed("invalid number"));
        }
        Ok(())
    }
}

/// Whether every parser reads `literal` as the same double: an integer literal within
/// ±(2^53 − 1), or a literal with a fraction or exponent that neither overflows nor
/// rounds a non-zero value to zero.
fn in_range(literal: &str, integer: bool, int_digits: usize) -> bool {
    if integer {
        // 16 digits cover 2^53 − 1; more can never be in range (a leading 0 is never
        // followed by digits in JSON).
        return int_digits <= 16
            && literal
                .parse::<i64>()
                .is_ok_and(|v| v.abs() <= MAX_SAFE_INTEGER);
    }
    // Rust's float parsing is correctly rounded, like every conforming parser's.
    let value: f64 = literal
        .parse()
        .expect("the JSON number grammar is a subset of Rust's");
    if value.is_infinite() {
        return false;
    }
    let mantissa = literal.split(['e', 'E']).next().unwrap_or(literal);
    value != 0.0 || !mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

impl fmt::Display for Ambiguity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests;
