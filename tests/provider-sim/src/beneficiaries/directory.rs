//! The directory's entries: who a payment goes to, with the full account number the
//! simulator keeps (a real provider's secret) and the masked form and fingerprint it
//! shows instead.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How an account number is written: an IBAN (`KZ86125KZT5004100100`) or a local number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Iban,
    Local,
}

impl Scheme {
    pub fn parse(text: &str) -> Option<Scheme> {
        match text {
            "iban" => Some(Scheme::Iban),
            "local" => Some(Scheme::Local),
            _ => None,
        }
    }
}

/// What a create or replace sets; the rest (version, times) the directory keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Details {
    pub name: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    pub scheme: Scheme,
    /// The full account number: never answered, only its masked form and fingerprint.
    pub account_number: String,
    pub verified: bool,
}

impl Details {
    /// Whether `other` differs in what a version counts (name, country, account).
    fn differs_from(&self, other: &Details) -> bool {
        self.name != other.name
            || self.country != other.country
            || self.scheme != other.scheme
            || self.account_number != other.account_number
    }
}

#[derive(Clone, Debug)]
pub struct Beneficiary {
    pub id: String,
    pub details: Details,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Beneficiary {
    /// The wire shape of `GET /v1/beneficiaries/{id}`.
    pub fn to_json(&self) -> Value {
        let d = &self.details;
        json!({
            "id": self.id,
            "name": d.name,
            "country": d.country,
            "account": {
                "scheme": d.scheme,
                "masked": masked(d.scheme, &d.account_number),
                "fingerprint": fingerprint(&d.account_number),
            },
            "verified": d.verified,
            "version": self.version,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        })
    }
}

/// `KZ•• •••• •••• 1234` for an IBAN (its country, then the last four characters), `••••
/// 1234` for a local number.
pub fn masked(scheme: Scheme, number: &str) -> String {
    let chars: Vec<char> = number.chars().filter(|c| !c.is_whitespace()).collect();
    let last4: String = chars[chars.len().saturating_sub(4)..].iter().collect();
    match scheme {
        Scheme::Iban => {
            let country: String = chars.iter().take(2).collect();
            format!("{country}•• •••• •••• {last4}")
        }
        Scheme::Local => format!("•••• {last4}"),
    }
}

/// `sha256:` + the SHA-256 of the account number without spaces, upper case: equal
/// fingerprints mean the same account.
pub fn fingerprint(number: &str) -> String {
    let normal: String = number
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_uppercase)
        .collect();
    let digest = Sha256::digest(normal.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What a create or replace did.
#[derive(Debug, PartialEq, Eq)]
pub enum Upserted {
    Created,
    Replaced,
}

#[derive(Debug)]
pub struct Directory {
    entries: HashMap<String, Beneficiary>,
}

/// The seeded payees: `vendor_1` … `vendor_99` and `closed_vendor_0` … `closed_vendor_99`
/// (their payments are refused `account_closed`), the ids the demo and the tests pay.
/// `vendor_9` is on file but not verified.
const SEEDED: u32 = 100;

impl Directory {
    pub fn seeded(now: DateTime<Utc>) -> Self {
        let mut directory = Directory {
            entries: HashMap::new(),
        };
        for n in 0..SEEDED {
            if n > 0 {
                directory.upsert(&format!("vendor_{n}"), seed(n, "Vendor", n != 9), now);
            }
            directory.upsert(
                &format!("closed_vendor_{n}"),
                seed(n + 500, "Closed vendor", true),
                now,
            );
        }
        directory
    }

    pub fn get(&self, id: &str) -> Option<&Beneficiary> {
        self.entries.get(id)
    }

    /// Creates `id` at version 1, or replaces its details: its version grows by one when
    /// its name, country or account changed.
    pub fn upsert(&mut self, id: &str, details: Details, now: DateTime<Utc>) -> Upserted {
        match self.entries.get_mut(id) {
            Some(existing) => {
                if existing.details.differs_from(&details) {
                    existing.version += 1;
                }
                existing.details = details;
                existing.updated_at = now;
                Upserted::Replaced
            }
            None => {
                let beneficiary = Beneficiary {
                    id: id.to_owned(),
                    details,
                    version: 1,
                    created_at: now,
                    updated_at: now,
                };
                self.entries.insert(id.to_owned(), beneficiary);
                Upserted::Created
            }
        }
    }
}

/// A Kazakh company with an IBAN made from `n` (the same on every start).
fn seed(n: u32, kind: &str, verified: bool) -> Details {
    Details {
        name: format!("{kind} {n} LLP"),
        country: "KZ".into(),
        scheme: Scheme::Iban,
        account_number: format!(
            "KZ{:02}125KZT{:010}",
            n % 97,
            1_000_000 + u64::from(n) * 7_919
        ),
        verified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn details(account: &str) -> Details {
        Details {
            name: "Vendor 77 LLP".into(),
            country: "KZ".into(),
            scheme: Scheme::Iban,
            account_number: account.into(),
            verified: true,
        }
    }

    #[test]
    fn the_account_is_shown_masked_with_its_fingerprint_only() {
        let now = Utc::now();
        let mut directory = Directory::seeded(now);
        directory.upsert("b", details("KZ86 125K ZT50 0410 0100"), now);
        let shown = directory.get("b").unwrap().to_json();
        assert_eq!(shown["account"]["masked"], "KZ•• •••• •••• 0100");
        assert_eq!(
            shown["account"]["fingerprint"],
            json!(fingerprint("KZ86125KZT5004100100"))
        );
        assert!(!shown.to_string().contains("5004100100"));
        assert_eq!(masked(Scheme::Local, "40702810900000001234"), "•••• 1234");
    }

    #[test]
    fn the_version_grows_on_a_change_of_name_country_or_account_only() {
        let now = Utc::now();
        let mut directory = Directory::seeded(now);
        assert_eq!(
            directory.upsert("b", details("KZ1"), now),
            Upserted::Created
        );
        directory.upsert("b", details("KZ1"), now);
        assert_eq!(directory.get("b").unwrap().version, 1);
        directory.upsert("b", details("KZ2"), now);
        assert_eq!(directory.get("b").unwrap().version, 2);
        let unverified = Details {
            verified: false,
            ..details("KZ2")
        };
        directory.upsert("b", unverified, now);
        assert_eq!(directory.get("b").unwrap().version, 2);
    }

    #[test]
    fn the_demo_and_test_payees_are_seeded() {
        let directory = Directory::seeded(Utc::now());
        for id in ["vendor_77", "vendor_12", "vendor_3", "closed_vendor_7"] {
            assert_eq!(directory.get(id).unwrap().version, 1, "{id}");
        }
        assert!(!directory.get("vendor_9").unwrap().details.verified);
        assert!(directory.get("invalid_vendor").is_none());
        assert_ne!(
            directory.get("vendor_1").unwrap().to_json()["account"]["fingerprint"],
            directory.get("vendor_2").unwrap().to_json()["account"]["fingerprint"]
        );
    }
}
