//! ISO 4217 active currency codes: an intent naming anything else is refused at the
//! edge instead of failing later at the provider.

/// Sorted, so lookups can binary-search; the intent JSON Schema lists the same codes.
pub const ISO_4217: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD",
    "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD",
    "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ",
    "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD",
    "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR",
    "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR",
    "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN",
    "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR",
    "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB",
    "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS",
    "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
];

pub fn is_iso_4217(code: &str) -> bool {
    ISO_4217.binary_search(&code).is_ok()
}

/// Active codes whose minor unit is not a hundredth (ISO 4217's "minor unit" column);
/// every other code in [`ISO_4217`] has two decimals. Sorted by code.
const EXPONENTS_OTHER_THAN_TWO: &[(&str, u32)] = &[
    ("BHD", 3),
    ("BIF", 0),
    ("CLP", 0),
    ("DJF", 0),
    ("GNF", 0),
    ("IQD", 3),
    ("ISK", 0),
    ("JOD", 3),
    ("JPY", 0),
    ("KMF", 0),
    ("KRW", 0),
    ("KWD", 3),
    ("LYD", 3),
    ("OMR", 3),
    ("PYG", 0),
    ("RWF", 0),
    ("TND", 3),
    ("UGX", 0),
    ("VND", 0),
    ("VUV", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("XPF", 0),
];

/// How many decimals the currency's minor unit has: amounts are stored in minor units
/// (`amount_minor`), so 1 major unit is `10^exponent` of them. `None` for a code that is
/// not an active ISO 4217 code.
pub fn minor_unit_exponent(code: &str) -> Option<u32> {
    if !is_iso_4217(code) {
        return None;
    }
    Some(
        match EXPONENTS_OTHER_THAN_TWO.binary_search_by(|(c, _)| c.cmp(&code)) {
            Ok(i) => EXPONENTS_OTHER_THAN_TWO[i].1,
            Err(_) => 2,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_so_binary_search_is_valid() {
        assert!(ISO_4217.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn exceptions_are_sorted_and_active_codes() {
        assert!(EXPONENTS_OTHER_THAN_TWO.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(EXPONENTS_OTHER_THAN_TWO.iter().all(|(c, _)| is_iso_4217(c)));
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
