//! A standing mandate as a person composes it in a form: amounts typed in major units
//! ("1,500.00"), payees one a line, the window as dates and times in UTC. Read into the
//! [`Mandate`] it describes, checked by the same rules as a signed statement, so the words
//! shown before signing and the statement signed are exactly what the API will store.
//! Pure: the mandate id and the clock are inputs.

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::approval_statement::parse_expiry;
use crate::catalogue::Action;
use crate::currency::minor_unit_exponent;
use crate::mandate::{Mandate, MandatePayee, MandatePayees, MandateProblem};
pub use crate::money::amount_minor;

/// What the form posts, each field as typed.
#[derive(Debug, Clone, Default)]
pub struct MandateForm {
    pub tenant_id: String,
    /// Wire names of the actions ticked.
    pub actions: Vec<String>,
    /// Any payee the directory verified, instead of `payees`.
    pub any_verified_payee: bool,
    /// One payee a line: `ID=sha256:…` (the account fingerprint shown with the payee).
    pub payees: String,
    pub currency: String,
    pub per_operation_max: String,
    pub budget: String,
    pub count_limit: String,
    /// Empty: now.
    pub valid_from: String,
    pub valid_until: String,
    /// Empty: anyone's intents in the tenant.
    pub for_principal: String,
}

fn problem(field: &'static str, text: impl Into<String>) -> MandateProblem {
    MandateProblem {
        field,
        problem: text.into(),
    }
}

/// An instant typed as RFC 3339 UTC (`2026-12-01T00:00:00Z`) or as a browser's date and
/// time field gives it (`2026-12-01T00:00`, read as UTC: the form says so).
pub fn instant(typed: &str) -> Option<DateTime<Utc>> {
    let t = typed.trim();
    parse_expiry(t).or_else(|| {
        ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
            .map(|n| n.and_utc())
    })
}

fn payees_of(form: &MandateForm) -> Result<MandatePayees, MandateProblem> {
    if form.any_verified_payee {
        return Ok(MandatePayees::AnyVerified);
    }
    let mut list = Vec::new();
    for line in form.payees.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (id, fingerprint) = line.split_once('=').ok_or_else(|| {
            problem(
                "payees",
                format!("write each payee as ID=sha256:… (the account fingerprint), not {line:?}"),
            )
        })?;
        list.push(MandatePayee {
            id: id.trim().to_owned(),
            account_fingerprint: fingerprint.trim().to_owned(),
        });
    }
    if list.is_empty() {
        return Err(problem(
            "payees",
            "name at least one payee, or choose any verified payee",
        ));
    }
    Ok(MandatePayees::Listed(list))
}

impl MandateForm {
    /// The mandate `mandate_id` this form describes at `now`, checked as the API checks a
    /// statement (the field at fault named, in the form's words).
    pub fn mandate(&self, mandate_id: &str, now: DateTime<Utc>) -> Result<Mandate, MandateProblem> {
        let currency = self.currency.trim().to_ascii_uppercase();
        if minor_unit_exponent(&currency).is_none() {
            return Err(problem("currency", "not an ISO 4217 code"));
        }
        let amount = |field: &'static str, typed: &str| {
            amount_minor(typed, &currency).ok_or_else(|| {
                problem(
                    field,
                    format!("a positive amount in {currency}, at most its decimals"),
                )
            })
        };
        let mut actions = Vec::new();
        for name in &self.actions {
            let action = Action::parse(name)
                .ok_or_else(|| problem("actions", format!("no action {name:?}")))?;
            actions.push(action);
        }
        let count_limit = self
            .count_limit
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| problem("count_limit", "a whole number of operations, 1 or more"))?;
        let valid_from = if self.valid_from.trim().is_empty() {
            // Whole seconds: the statement writes no fractions.
            DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
        } else {
            instant(&self.valid_from)
                .ok_or_else(|| problem("valid_from", "a date and time (UTC)"))?
        };
        let valid_until = instant(&self.valid_until)
            .ok_or_else(|| problem("valid_until", "a date and time (UTC)"))?;
        let for_principal = Some(self.for_principal.trim())
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        let m = Mandate {
            mandate_id: mandate_id.to_owned(),
            tenant_id: self.tenant_id.trim().to_owned(),
            actions,
            payees: payees_of(self)?,
            per_operation_max_minor: amount("per_operation_max_minor", &self.per_operation_max)?,
            budget_minor: amount("budget_minor", &self.budget)?,
            currency,
            count_limit,
            valid_from,
            valid_until,
            for_principal,
        };
        // Whatever the API would refuse is refused here, before anything is signed.
        Mandate::from_json(&m.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn form() -> MandateForm {
        MandateForm {
            tenant_id: "org_482".into(),
            actions: vec!["payment.create".into()],
            any_verified_payee: false,
            payees: format!("vendor_77=sha256:{}\n\n", "a".repeat(64)),
            currency: "kzt".into(),
            per_operation_max: "1,500.00".into(),
            budget: "30 000".into(),
            count_limit: "40".into(),
            valid_from: "".into(),
            valid_until: "2026-12-31T18:00".into(),
            for_principal: "billing-bot".into(),
        }
    }

    #[test]
    fn amounts_are_read_in_the_currencys_major_units() {
        assert_eq!(amount_minor("1,500.00", "KZT"), Some(150_000));
        assert_eq!(amount_minor("1500", "KZT"), Some(150_000));
        assert_eq!(amount_minor("KZT 1 500.5", "KZT"), Some(150_050));
        assert_eq!(amount_minor("1500 JPY", "JPY"), Some(1500));
        assert_eq!(amount_minor("1.250", "KWD"), Some(1250));
        assert_eq!(
            amount_minor("1.001", "KZT"),
            None,
            "more decimals than KZT has"
        );
        assert_eq!(amount_minor("0", "KZT"), None, "nothing is no limit");
        assert_eq!(amount_minor("-5", "KZT"), None);
        assert_eq!(amount_minor("12e3", "KZT"), None);
        assert_eq!(amount_minor("", "KZT"), None);
        assert_eq!(amount_minor("99999999999999999999", "KZT"), None);
        assert_eq!(amount_minor("5", "XYZ"), None);
    }

    #[test]
    fn the_form_reads_as_the_mandate_it_describes() {
        let now = Utc.with_ymd_and_hms(2026, 12, 6, 6, 0, 0).unwrap();
        let m = form()
            .mandate("md_01JF0000000000000000000000", now)
            .unwrap();
        assert_eq!(m.currency, "KZT");
        assert_eq!(m.per_operation_max_minor, 150_000);
        assert_eq!(m.budget_minor, 3_000_000);
        assert_eq!(m.count_limit, 40);
        assert_eq!(m.valid_from, now);
        assert_eq!(
            m.valid_until,
            Utc.with_ymd_and_hms(2026, 12, 31, 18, 0, 0).unwrap()
        );
        assert_eq!(m.for_principal.as_deref(), Some("billing-bot"));
        let MandatePayees::Listed(list) = &m.payees else {
            panic!("listed payees")
        };
        assert_eq!(list[0].id, "vendor_77");
        let words = m.to_words();
        assert!(
            words.contains(
                "each at most 1,500.00 KZT, in all at most 30,000.00 KZT, at most 40 operations"
            ),
            "{words}"
        );
    }

    #[test]
    fn what_the_api_would_refuse_is_refused_naming_the_field() {
        let now = Utc.with_ymd_and_hms(2026, 12, 6, 6, 0, 0).unwrap();
        let id = "md_01JF0000000000000000000000";
        let with = |f: fn(&mut MandateForm)| {
            let mut x = form();
            f(&mut x);
            x.mandate(id, now).unwrap_err().field
        };
        assert_eq!(
            with(|f| f.budget = "1,000.00".into()),
            "per_operation_max_minor"
        );
        assert_eq!(
            with(|f| f.per_operation_max = "abc".into()),
            "per_operation_max_minor"
        );
        assert_eq!(with(|f| f.payees = "vendor_77".into()), "payees");
        assert_eq!(with(|f| f.payees = String::new()), "payees");
        assert_eq!(with(|f| f.actions = vec![]), "actions");
        assert_eq!(
            with(|f| f.actions = vec!["crm.deal.update".into()]),
            "actions"
        );
        assert_eq!(with(|f| f.count_limit = "0".into()), "count_limit");
        assert_eq!(
            with(|f| f.valid_until = "2026-12-01T00:00".into()),
            "valid_until"
        );
        assert_eq!(with(|f| f.currency = "XYZ".into()), "currency");
        let mut any = form();
        any.payees = String::new();
        any.any_verified_payee = true;
        assert_eq!(
            any.mandate(id, now).unwrap().payees,
            MandatePayees::AnyVerified
        );
    }
}
