//! The directory's payee name check (Verification / Confirmation of Payee): the name a
//! payer gives against the name the account is held under. Deterministic, so that tests
//! and the demo can ask for each result:
//!
//! - `match`: the same name, ignoring case and runs of blanks;
//! - `close_match` (with the name held): the same once punctuation and the legal form
//!   (`LLP`, `Ltd`, `Limited`, `LLC`, `Inc`, `PLC`, `GmbH`, `TOO`, `Co`, `Corp`, `Company`)
//!   are dropped too: `vendor 77` for `Vendor 77 LLP`;
//! - `no_match`: anything else;
//! - `not_possible`: the account is a local number (the scheme checks IBANs only).

use serde_json::{json, Value};

use super::directory::{Details, Scheme};

const LEGAL_FORMS: &[&str] = &[
    "llp", "ltd", "limited", "llc", "inc", "plc", "gmbh", "too", "co", "corp", "company",
];

/// The `name_check` member of a lookup that gave `asked`.
pub fn name_check(details: &Details, asked: &str) -> Value {
    if details.scheme == Scheme::Local {
        return json!({"result": "not_possible"});
    }
    let held = &details.name;
    if blanks_and_case(asked) == blanks_and_case(held) {
        json!({"result": "match"})
    } else if loosely(asked) == loosely(held) && !loosely(held).is_empty() {
        json!({"result": "close_match", "name": held})
    } else {
        json!({"result": "no_match"})
    }
}

fn blanks_and_case(name: &str) -> String {
    name.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn loosely(name: &str) -> String {
    let letters: String = name
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    blanks_and_case(&letters)
        .split(' ')
        .filter(|w| !LEGAL_FORMS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(name: &str, scheme: Scheme) -> Details {
        Details {
            name: name.into(),
            country: "KZ".into(),
            scheme,
            account_number: "KZ86125KZT5004100100".into(),
            verified: true,
        }
    }

    #[test]
    fn each_result_by_its_rule() {
        let acme = held("Acme Supplies Ltd", Scheme::Iban);
        let result = |asked| name_check(&acme, asked)["result"].clone();
        assert_eq!(result("acme  supplies LTD"), "match");
        assert_eq!(result("Acme Supplies"), "close_match");
        assert_eq!(result("ACME SUPPLIES LIMITED."), "close_match");
        assert_eq!(
            name_check(&acme, "Acme Supplies")["name"],
            "Acme Supplies Ltd"
        );
        assert_eq!(result("Mallory Holdings Ltd"), "no_match");
        assert_eq!(result("Ltd"), "no_match");
        let local = held("Acme Supplies Ltd", Scheme::Local);
        assert_eq!(
            name_check(&local, "Acme Supplies Ltd")["result"],
            "not_possible"
        );
    }
}
