//! fleetctl's tables (the demo's report, `dead-letters list`, `history`): every column as
//! wide as its widest cell, counted in characters (an id, an action name, a status with
//! "(escalated)" or an arrow never pushes the columns after it out of line, whatever its
//! length).

/// Rows of cells, printed with the columns aligned; the last column is left as it is, and
/// the columns named in `right` are aligned to the right (numbers).
pub struct Table {
    rows: Vec<Vec<String>>,
    right: Vec<usize>,
}

impl Table {
    pub fn new(header: &[&str], right: &[usize]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| (*h).to_owned()).collect()],
            right: right.to_vec(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// A table of `header` and `rows`, every column aligned to the left.
    pub fn with_rows<const N: usize>(
        header: &[&str],
        rows: impl IntoIterator<Item = [String; N]>,
    ) -> Table {
        let mut table = Table::new(header, &[]);
        for row in rows {
            table.push(row.into());
        }
        table
    }

    /// The lines, without trailing spaces.
    pub fn lines(&self) -> Vec<String> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width = |c: usize| {
            self.rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        self.rows
            .iter()
            .map(|row| {
                let cells: Vec<String> = row
                    .iter()
                    .enumerate()
                    .map(
                        |(c, cell)| match (c + 1 == row.len(), self.right.contains(&c)) {
                            (true, _) => cell.clone(),
                            (false, true) => format!("{cell:>w$}", w = widths[c]),
                            (false, false) => format!("{cell:<w$}", w = widths[c]),
                        },
                    )
                    .collect();
                cells.join("  ").trim_end().to_owned()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_starts_at_the_same_character_on_every_line() {
        let mut t = Table::new(&["OPERATION", "ACTION", "EFFECTS", "WHAT"], &[2]);
        t.push(vec![
            "op_1".into(),
            "order.status_change".into(),
            "1".into(),
            "Move".into(),
        ]);
        t.push(vec![
            "op_22".into(),
            "payment.create".into(),
            "0".into(),
            "Pay ₸".into(),
        ]);
        t.push(vec![
            "op_3".into(),
            "crm.deal_update (escalated)".into(),
            "12".into(),
            "-".into(),
        ]);
        let lines = t.lines();
        let at = |line: &str, what: &str| line.find(what).map(|b| line[..b].chars().count());
        let what = at(&lines[0], "WHAT").unwrap();
        assert_eq!(at(&lines[1], "Move"), Some(what));
        assert_eq!(at(&lines[2], "Pay"), Some(what));
        assert_eq!(at(&lines[3], "-"), Some(what));
        let action = at(&lines[0], "ACTION").unwrap();
        assert_eq!(at(&lines[2], "payment"), Some(action));
        // Numbers to the right: their last digit under the header's last letter.
        assert_eq!(
            at(&lines[1], "1  Move").unwrap(),
            at(&lines[3], "2  -").unwrap()
        );
        assert!(lines.iter().all(|l| !l.ends_with(' ')));
    }
}
