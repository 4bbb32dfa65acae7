//! Amounts as a person reads them. Intents carry integer minor units (`amount_minor`);
//! how many of them make a major unit is the currency's ISO 4217 minor-unit exponent
//! (KZT and EUR 2, JPY 0, KWD 3). Showing 1250000 as "12,500.00 KZT" instead of the raw
//! integer is what lets an approver check the amount they approve.

use crate::currency::minor_unit_exponent;
use crate::strict_json::MAX_SAFE_INTEGER;

/// `amount_minor` in major units with thousands grouped by commas and the currency's
/// number of decimals, then the code: `12,500.00 KZT`, `1,250,000 JPY`, `1.250 KWD`.
/// `None` when the code is not an active ISO 4217 code (the amount cannot be read).
pub fn format_amount(amount_minor: i64, code: &str) -> Option<String> {
    let exponent = minor_unit_exponent(code)?;
    let digits = amount_minor.unsigned_abs().to_string();
    let width = exponent as usize + 1;
    let padded = format!("{digits:0>width$}");
    let (major, minor) = padded.split_at(padded.len() - exponent as usize);
    let sign = if amount_minor < 0 { "-" } else { "" };
    let grouped = group_thousands(major);
    Some(if minor.is_empty() {
        format!("{sign}{grouped} {code}")
    } else {
        format!("{sign}{grouped}.{minor} {code}")
    })
}

/// The minor units of a positive amount a person typed in `code`'s major units: digits
/// grouped or not (commas, spaces, apostrophes), at most the currency's decimals, the
/// code before or after optional ("1,500.00", "1500", "1 500.5 KZT"). `None` for anything
/// else, zero, or more than an intent may carry.
pub fn amount_minor(typed: &str, code: &str) -> Option<i64> {
    let exponent = minor_unit_exponent(code)? as usize;
    let mut text = typed.trim();
    if let Some(rest) = text.strip_suffix(code) {
        text = rest.trim_end();
    } else if let Some(rest) = text.strip_prefix(code) {
        text = rest.trim_start();
    }
    let digits: String = text
        .chars()
        .filter(|c| !matches!(c, ',' | ' ' | '\'' | '\u{a0}' | '\u{202f}'))
        .collect();
    let (major, minor) = digits.split_once('.').unwrap_or((&digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if major.is_empty() || !all_digits(major) || !all_digits(minor) || minor.len() > exponent {
        return None;
    }
    let whole = format!("{major}{minor:0<exponent$}");
    whole
        .parse::<i64>()
        .ok()
        .filter(|n| (1..=MAX_SAFE_INTEGER).contains(n))
}

fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_in_major_units() {
        assert_eq!(format_amount(1_250_000, "KZT").unwrap(), "12,500.00 KZT");
        assert_eq!(format_amount(1_250_000, "JPY").unwrap(), "1,250,000 JPY");
        assert_eq!(format_amount(1_250, "KWD").unwrap(), "1.250 KWD");
        assert_eq!(format_amount(1_250_000, "KWD").unwrap(), "1,250.000 KWD");
        assert_eq!(
            format_amount(100_000_000, "KZT").unwrap(),
            "1,000,000.00 KZT"
        );
        assert_eq!(format_amount(1, "USD").unwrap(), "0.01 USD");
        assert_eq!(format_amount(5, "KWD").unwrap(), "0.005 KWD");
        assert_eq!(format_amount(0, "EUR").unwrap(), "0.00 EUR");
        assert_eq!(format_amount(999, "JPY").unwrap(), "999 JPY");
        assert_eq!(format_amount(1000, "JPY").unwrap(), "1,000 JPY");
        assert_eq!(format_amount(-2500, "USD").unwrap(), "-25.00 USD");
        assert_eq!(
            format_amount(9_007_199_254_740_991, "USD").unwrap(),
            "90,071,992,547,409.91 USD"
        );
        assert_eq!(format_amount(7, "KWD").unwrap(), "0.007 KWD");
        assert_eq!(
            format_amount(i64::MIN, "USD").unwrap(),
            "-92,233,720,368,547,758.08 USD"
        );
        assert_eq!(format_amount(100, "ABC"), None);
        assert_eq!(format_amount(100, "kzt"), None);
    }
}
