//! A moment as the operation view writes it: RFC 3339 in UTC with exactly six fractional
//! digits and a `Z` (`2026-03-01T09:30:00.000000Z`), the text the SQL function `fleet_utc`
//! makes. chrono's own serialisation drops or varies the fraction, so the view carries its
//! times in this type to re-serialise them as they were read.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UtcMicros(pub DateTime<Utc>);

impl UtcMicros {
    /// Reads `text`, refusing anything but UTC with six fractional digits: another form
    /// would not be written back as it was read.
    pub fn parse(text: &str) -> Result<UtcMicros, String> {
        let at = DateTime::parse_from_rfc3339(text)
            .map_err(|e| format!("{text:?} is no RFC 3339 time: {e}"))?
            .with_timezone(&Utc);
        let t = UtcMicros(at);
        if t.to_string() != text {
            return Err(format!(
                "{text:?} is not written as UTC with six fractional digits"
            ));
        }
        Ok(t)
    }

    pub fn at(self) -> DateTime<Utc> {
        self.0
    }
}

impl From<UtcMicros> for DateTime<Utc> {
    fn from(t: UtcMicros) -> DateTime<Utc> {
        t.0
    }
}

impl fmt::Display for UtcMicros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Micros, true))
    }
}

impl Serialize for UtcMicros {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for UtcMicros {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<UtcMicros, D::Error> {
        let text = String::deserialize(deserializer)?;
        UtcMicros::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_reads_and_writes_fleet_utc_text_unchanged() {
        for text in [
            "2026-03-01T09:30:00.000000Z",
            "2026-03-01T09:30:00.120000Z",
            "1999-12-31T23:59:59.999999Z",
        ] {
            let t = UtcMicros::parse(text).unwrap();
            assert_eq!(t.to_string(), text);
            assert_eq!(serde_json::to_value(t).unwrap(), text);
        }
    }

    #[test]
    fn other_forms_are_refused() {
        for text in [
            "2026-03-01T09:30:00Z",
            "2026-03-01T09:30:00.12Z",
            "2026-03-01T09:30:00.000000+00:00",
            "2026-03-01 09:30:00.000000Z",
            "yesterday",
        ] {
            assert!(UtcMicros::parse(text).is_err(), "{text}");
        }
    }
}
