//! ISO 4217 active currency codes: an intent naming anything else is refused at the
//! edge instead of failing later at the provider.

use std::sync::LazyLock;

/// The standard's table of active codes, one a line, sorted by code: the code and its
/// minor unit (how many decimals it has).
const TABLE: &str = include_str!("currency/iso_4217.txt");

/// Each active code with its minor-unit exponent, sorted by code, so lookups can
/// binary-search.
static EXPONENTS: LazyLock<Vec<(&'static str, u32)>> = LazyLock::new(|| {
    TABLE
        .lines()
        .map(|line| {
            let (code, exponent) = line.split_once(' ').expect("a line is a code and its unit");
            (code, exponent.parse().expect("a minor unit is a digit"))
        })
        .collect()
});

/// The active codes, sorted; the intent JSON Schema lists the same codes.
pub static ISO_4217: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| EXPONENTS.iter().map(|(code, _)| *code).collect());

pub fn is_iso_4217(code: &str) -> bool {
    minor_unit_exponent(code).is_some()
}

/// How many decimals the currency's minor unit has: amounts are stored in minor units
/// (`amount_minor`), so 1 major unit is `10^exponent` of them. `None` for a code that is
/// not an active ISO 4217 code.
pub fn minor_unit_exponent(code: &str) -> Option<u32> {
    let i = EXPONENTS.binary_search_by(|(c, _)| c.cmp(&code)).ok()?;
    Some(EXPONENTS[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_so_binary_search_is_valid() {
        assert!(ISO_4217.windows(2).all(|w| w[0] < w[1]));
        assert!(ISO_4217.iter().all(|c| c.len() == 3));
        assert!(EXPONENTS.iter().all(|(_, e)| *e <= 4));
    }

    #[test]
    fn exponents_follow_iso_4217() {
        assert_eq!(minor_unit_exponent("KZT"), Some(2));
        assert_eq!(minor_unit_exponent("USD"), Some(2));
        assert_eq!(minor_unit_exponent("JPY"), Some(0));
        assert_eq!(minor_unit_exponent("KRW"), Some(0));
        assert_eq!(minor_unit_exponent("KWD"), Some(3));
        assert_eq!(minor_unit_exponent("BHD"), Some(3));
        assert_eq!(minor_unit_exponent("XXX"), None);
        assert_eq!(minor_unit_exponent("kzt"), None);
    }

    #[test]
    fn known_and_unknown_codes() {
        assert!(is_iso_4217("KZT") && is_iso_4217("USD") && is_iso_4217("EUR"));
        assert!(!is_iso_4217("kzt") && !is_iso_4217("XXX1") && !is_iso_4217("ABC"));
    }
}
