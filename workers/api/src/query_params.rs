//! The query string as a typed value, refused with `invalid_query` naming the parameter
//! at fault: an unknown one, or one given twice, is named by its name (when that name is
//! a plain identifier; otherwise no parameter is named, so the answer never repeats
//! arbitrary text).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// The request's query parameters as a `T` (a struct of optional strings that refuses
/// unknown members).
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        read(parts.uri.query().unwrap_or("")).map(Params)
    }
}

fn read<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let mut params = Map::new();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if params
            .insert(name.to_string(), Value::String(value.into_owned()))
            .is_some()
        {
            return Err(ApiError::BadQuery {
                field: plain(&name),
            });
        }
    }
    fleet_core::member_path::read(&Value::Object(params)).map_err(|refused| ApiError::BadQuery {
        field: refused.path,
    })
}

fn plain(name: &str) -> Option<String> {
    fleet_core::member_path::plain_name(name).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Q {
        limit: Option<String>,
        cursor: Option<String>,
    }

    fn field(query: &str) -> Option<String> {
        match read::<Q>(query) {
            Err(ApiError::BadQuery { field }) => field,
            other => panic!("{query}: {other:?}"),
        }
    }

    #[test]
    fn known_parameters_are_read() {
        assert_eq!(
            read::<Q>("limit=5&cursor=a%20b").unwrap(),
            Q {
                limit: Some("5".into()),
                cursor: Some("a b".into())
            }
        );
        assert_eq!(
            read::<Q>("").unwrap(),
            Q {
                limit: None,
                cursor: None
            }
        );
    }

    #[test]
    fn an_unknown_or_repeated_parameter_is_named() {
        assert_eq!(field("limit=5&sort=asc").as_deref(), Some("sort"));
        assert_eq!(field("limit=5&limit=6").as_deref(), Some("limit"));
    }

    #[test]
    fn a_name_that_is_no_plain_identifier_is_not_repeated() {
        assert_eq!(field("a%0Ab=1"), None);
        assert_eq!(field(&format!("{}=1", "x".repeat(65))), None);
    }
}
