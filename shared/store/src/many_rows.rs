//! One statement over many rows of values: each parameter `$k` of a one-row statement
//! becomes an array with one element per row (`Column`), the arrays are read back as
//! rows by `unnest … WITH ORDINALITY` (`rows_of_values`), and the one-row statement's
//! text reads each `$k` from its row as `i.pk` (`of_each_row`). A batch statement built
//! this way binds the same values, through the same functions, as the statement it
//! repeats, and its text is that statement's text.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{to_sql_checked, IsNull, Kind, ToSql, Type};

/// A statement's parameter, as every statement of the store binds it.
pub(crate) type Param<'a> = &'a (dyn ToSql + Sync);

/// `i AS (…)`, the CTE reading `types.len()` arrays (`$1` … as `p1` …) back as rows,
/// numbered from 1 in the arrays' order as `n`.
pub(crate) fn rows_of_values(types: &[&str]) -> String {
    let arrays: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(k, ty)| format!("${}::{ty}[]", k + 1))
        .collect();
    let columns: Vec<String> = (1..=types.len()).map(|k| format!("p{k}")).collect();
    format!(
        "i AS (
    SELECT * FROM unnest({}) WITH ORDINALITY AS i({}, n)
)",
        arrays.join(", "),
        columns.join(", ")
    )
}

/// The parameters of a many-row statement: the `k`th is the column of every row's `k`th
/// value.
pub(crate) fn columns_of<'a, const K: usize>(rows: &[[Param<'a>; K]]) -> Vec<Column<'a>> {
    (0..K)
        .map(|k| Column(rows.iter().map(|r| r[k]).collect()))
        .collect()
}

/// `sql` with every parameter `$k` read from the row of values `i` instead, as `i.pk`.
pub(crate) fn of_each_row(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() * 2);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        if digits == 0 {
            out.push('$');
        } else {
            out.push_str("i.p");
            out.push_str(&rest[at + 1..at + 1 + digits]);
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// One parameter of many rows: the array of the values each row binds in that place,
/// each encoded as the array's element type (Postgres' binary array format: one
/// dimension, lower bound 1). The values are those the one-row statement binds, so the
/// many-row statement is bound from the same functions.
#[derive(Debug)]
pub(crate) struct Column<'a>(pub(crate) Vec<Param<'a>>);

impl ToSql for Column<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        let Kind::Array(member) = ty.kind() else {
            return Err(format!("a column of values binds an array, not {ty}").into());
        };
        let len = i32::try_from(self.0.len())?;
        out.put_i32(1);
        let has_nulls = out.len();
        out.put_i32(0);
        out.put_u32(member.oid());
        out.put_i32(len);
        out.put_i32(1);
        let mut nulls = false;
        for value in &self.0 {
            let at = out.len();
            out.put_i32(0);
            let size = match value.to_sql_checked(member, out)? {
                IsNull::Yes => {
                    nulls = true;
                    -1
                }
                IsNull::No => i32::try_from(out.len() - at - 4)?,
            };
            out[at..at + 4].copy_from_slice(&size.to_be_bytes());
        }
        if nulls {
            out[has_nulls..has_nulls + 4].copy_from_slice(&1i32.to_be_bytes());
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(ty.kind(), Kind::Array(_))
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_postgres::types::FromSql;

    #[test]
    fn each_parameter_is_read_from_the_row_of_values() {
        assert_eq!(
            of_each_row("a = $1 AND b = $12::float8, $ x $27"),
            "a = i.p1 AND b = i.p12::float8, $ x i.p27"
        );
    }

    #[test]
    fn a_column_is_the_array_of_its_values_with_their_nulls() {
        let values: Vec<Param<'_>> = vec![&1i64, &None::<i64>, &None::<i64>, &3i64];
        let mut out = BytesMut::new();
        let column = Column(values);
        assert!(matches!(
            column.to_sql_checked(&Type::INT8_ARRAY, &mut out).unwrap(),
            IsNull::No
        ));
        let back = Vec::<Option<i64>>::from_sql(&Type::INT8_ARRAY, &out).unwrap();
        assert_eq!(back, vec![Some(1), None, None, Some(3)]);

        let (a, b) = ("in_progress", Some("x"));
        let mut out = BytesMut::new();
        Column(vec![&a, &b])
            .to_sql_checked(&Type::TEXT_ARRAY, &mut out)
            .unwrap();
        let back = Vec::<Option<String>>::from_sql(&Type::TEXT_ARRAY, &out).unwrap();
        assert_eq!(back, vec![Some("in_progress".into()), Some("x".into())]);
    }

    #[test]
    fn a_column_refuses_a_value_of_another_type() {
        let mut out = BytesMut::new();
        assert!(Column(vec![&"text"])
            .to_sql_checked(&Type::INT8_ARRAY, &mut out)
            .is_err());
    }

    #[test]
    fn the_rows_of_values_read_each_array_as_a_numbered_column() {
        assert_eq!(
            rows_of_values(&["text", "int8"]),
            "i AS (\n    SELECT * FROM unnest($1::text[], $2::int8[]) WITH ORDINALITY AS i(p1, p2, n)\n)"
        );
    }
}
