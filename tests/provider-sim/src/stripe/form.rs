//! `application/x-www-form-urlencoded`, as Stripe reads request bodies and query strings:
//! `+` is a space, `%XX` a byte; nested fields keep their bracketed names
//! (`metadata[fleet_operation]`).

/// The pairs of `raw`, in order; a pair without `=` has an empty value. Bytes that do not
/// decode to UTF-8 are replaced (the simulator only compares and echoes them).
pub fn decode(raw: &[u8]) -> Vec<(String, String)> {
    raw.split(|b| *b == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = match pair.iter().position(|b| *b == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &[][..]),
            };
            (unescape(name), unescape(value))
        })
        .collect()
}

fn unescape(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < raw.len() => match (hex(raw[i + 1]), hex(raw[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_decode_as_forms_do() {
        assert_eq!(
            decode(b"amount=100&metadata%5Bfleet_operation%5D=op_1&q=a+b%27&flag"),
            vec![
                ("amount".into(), "100".into()),
                ("metadata[fleet_operation]".into(), "op_1".into()),
                ("q".into(), "a b'".into()),
                ("flag".into(), String::new()),
            ]
        );
        assert_eq!(decode(b"a=%4"), vec![("a".into(), "%4".into())]);
        assert_eq!(decode(b""), vec![]);
    }
}
