//! How `show` and `list` print values for people: amounts in major units with their
//! currency, and ages. JSON output keeps the stored values (minor units, timestamps).

use chrono::{DateTime, Utc};
use fleet_core::money::format_amount;
use serde_json::Value;

/// The amount of an operation's payload (`amount_minor` and `currency`, as payments,
/// refunds and deal creates carry them), in major units: `12,500.00 KZT`. `None` when
/// the payload carries no amount (a deal update).
pub fn amount(payload: &Value) -> Option<String> {
    let minor = payload.get("amount_minor")?.as_i64()?;
    let currency = payload.get("currency")?.as_str()?;
    Some(
        format_amount(minor, currency)
            .unwrap_or_else(|| format!("{minor} (minor units) {currency}")),
    )
}

/// How long ago `since` was, in its largest whole unit: `42s`, `5m`, `3h`, `12d`. A time
/// in the future (clocks a little apart) reads as `0s`.
pub fn age(since: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - since).num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m", s / 60),
        3_600..86_400 => format!("{}h", s / 3_600),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    #[test]
    fn amounts_are_in_major_units_with_their_currency() {
        let payment = json!({"invoice_id": "inv_1", "beneficiary_id": "v_1", "amount_minor": 1_250_000, "currency": "KZT"});
        assert_eq!(amount(&payment).as_deref(), Some("12,500.00 KZT"));
        assert_eq!(
            amount(&json!({"amount_minor": 500, "currency": "JPY"})).as_deref(),
            Some("500 JPY")
        );
        assert_eq!(
            amount(&json!({"amount_minor": 1_005, "currency": "KWD"})).as_deref(),
            Some("1.005 KWD")
        );
        assert_eq!(
            amount(&json!({"expected_version": 3, "patch": {"stage": "won"}})),
            None
        );
    }

    #[test]
    fn ages_use_their_largest_whole_unit() {
        let now = Utc::now();
        assert_eq!(age(now, now), "0s");
        assert_eq!(age(now - Duration::seconds(59), now), "59s");
        assert_eq!(age(now - Duration::seconds(60), now), "1m");
        assert_eq!(age(now - Duration::minutes(90), now), "1h");
        assert_eq!(age(now - Duration::hours(49), now), "2d");
        assert_eq!(age(now + Duration::seconds(3), now), "0s");
    }
}
