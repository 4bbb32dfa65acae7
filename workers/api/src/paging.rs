//! The listings' pages (`GET /v1/operations`, `/v1/operations/{id}/history`,
//! `/v1/dead-letters`): the page size a caller asks for, and the cut of the rows read into
//! one page and the cursor of the next. Each listing keeps its own cursor's form.

use crate::error::ApiError;

/// The largest page a caller may ask for.
pub const MAX_PAGE: i64 = 100;
/// The page size when the caller names none.
pub const DEFAULT_PAGE: i64 = 50;

/// `invalid_query` naming the query parameter `field`.
pub fn bad_query(field: &str) -> ApiError {
    ApiError::BadQuery {
        field: Some(field.to_owned()),
    }
}

/// The query's `limit`: [`DEFAULT_PAGE`] when it is left out, else a whole number from 1
/// to [`MAX_PAGE`] (anything else is `invalid_query` naming `limit`).
pub fn limit(asked: Option<&str>) -> Result<i64, ApiError> {
    match asked {
        None => Ok(DEFAULT_PAGE),
        Some(l) => l
            .parse()
            .ok()
            .filter(|l| (1..=MAX_PAGE).contains(l))
            .ok_or_else(|| bad_query("limit")),
    }
}

/// The page of `rows`, which were read with one row more than `limit` asks for: that row
/// only says whether another page follows. Answers the page and, when another follows,
/// the cursor `after` makes of the page's last row.
pub fn cut<T>(
    mut rows: Vec<T>,
    limit: i64,
    after: impl FnOnce(&T) -> String,
) -> (Vec<T>, Option<String>) {
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_cursor = if more { rows.last().map(after) } else { None };
    (rows, next_cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_outside_one_to_a_hundred_are_refused() {
        assert_eq!(limit(None).unwrap(), DEFAULT_PAGE);
        assert_eq!(limit(Some("1")).unwrap(), 1);
        assert_eq!(limit(Some("100")).unwrap(), MAX_PAGE);
        for bad in ["0", "101", "-1", "ten", ""] {
            assert!(
                matches!(limit(Some(bad)), Err(ApiError::BadQuery { field: Some(f) }) if f == "limit"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_row_past_the_limit_makes_a_next_cursor() {
        let after = |n: &i32| n.to_string();
        assert_eq!(
            cut(vec![1, 2, 3], 2, after),
            (vec![1, 2], Some("2".to_owned()))
        );
        assert_eq!(cut(vec![1, 2], 2, after), (vec![1, 2], None));
        assert_eq!(cut(Vec::<i32>::new(), 2, after), (vec![], None));
    }
}
