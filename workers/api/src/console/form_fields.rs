//! A form's fields as posted, for forms whose fields repeat (ticked boxes): axum's `Form`
//! keeps one value a name, these keep every one, in order.

use axum::body::Bytes;

/// `application/x-www-form-urlencoded` fields, every value of every name.
pub struct FormFields(Vec<(String, String)>);

impl FormFields {
    pub fn parse(body: &[u8]) -> FormFields {
        FormFields(
            url::form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub fn of(body: &Bytes) -> FormFields {
        FormFields::parse(body)
    }

    /// The first value of `name`, or an empty string.
    pub fn one(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// Whether `name` was posted (a ticked box).
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }

    /// Every value of `name`, in the order posted.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_fields_keep_every_value_in_order() {
        let f = FormFields::parse(b"op=a&tenant=org_1&op=b%20c&any=on");
        assert_eq!(f.all("op"), vec!["a", "b c"]);
        assert_eq!(f.one("tenant"), "org_1");
        assert_eq!(f.one("missing"), "");
        assert!(f.has("any") && !f.has("none"));
    }
}
