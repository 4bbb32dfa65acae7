//! The one table a bench prints (figure, value, the fleet's target, whether it is met),
//! and the JSON file next to it.

use std::path::Path;

use serde::Serialize;

/// A measured figure as the tables print it: three significant digits or so, `n/a` for
/// one not measured.
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A figure with a target of the fleet's, as it goes into the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub figure: String,
    pub value: String,
    pub target: String,
    pub met: Option<bool>,
}

#[derive(Default)]
pub struct Table {
    rows: Vec<Target>,
}

impl Table {
    pub fn row(&mut self, figure: &str, value: impl Into<String>) {
        self.rows.push(Target {
            figure: figure.into(),
            value: value.into(),
            target: String::new(),
            met: None,
        });
    }

    pub fn target(
        &mut self,
        figure: &str,
        value: impl Into<String>,
        target: impl Into<String>,
        met: Option<bool>,
    ) {
        self.rows.push(Target {
            figure: figure.into(),
            value: value.into(),
            target: target.into(),
            met,
        });
    }

    /// A figure whose target is a ceiling: the ceiling is written once, both as the target
    /// the table prints (`≤ 0.8 ms`) and as the bound `measured` is held to.
    pub fn at_most(
        &mut self,
        figure: &str,
        value: impl Into<String>,
        measured: f64,
        (limit, unit): (f64, &str),
    ) {
        let target = if unit.is_empty() {
            format!("≤ {limit}")
        } else {
            format!("≤ {limit} {unit}")
        };
        self.target(figure, value, target, Some(measured <= limit));
    }

    pub fn targets(&self) -> Vec<Target> {
        self.rows
            .iter()
            .filter(|r| !r.target.is_empty())
            .cloned()
            .collect()
    }

    pub fn print(&self) {
        let w0 = self
            .rows
            .iter()
            .map(|r| r.figure.chars().count())
            .max()
            .unwrap_or(0)
            .max(6);
        let w1 = self
            .rows
            .iter()
            .map(|r| r.value.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let w2 = self
            .rows
            .iter()
            .map(|r| r.target.chars().count())
            .max()
            .unwrap_or(0)
            .max(6);
        let pad =
            |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
        println!(
            "{}  {}  {}  MET",
            pad("FIGURE", w0),
            pad("VALUE", w1),
            pad("TARGET", w2)
        );
        for r in &self.rows {
            let met = match r.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "",
            };
            println!(
                "{}  {}  {}  {met}",
                pad(&r.figure, w0),
                pad(&r.value, w1),
                pad(&r.target, w2)
            );
        }
    }
}

pub fn write_json(path: &Path, report: &impl Serialize) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_vec_pretty(report)?)?;
    println!("json: {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn a_ceiling_prints_as_written_and_holds_inclusively() {
        let mut t = Table::default();
        t.at_most("commits", "4.00", 4.0, (4.0, ""));
        t.at_most("cpu", "0.801 ms", 0.801, (0.8, "ms"));
        t.at_most("rss", "12.0 MiB", 12.0, (64.0, "MiB"));
        let shown: Vec<(String, Option<bool>)> =
            t.targets().into_iter().map(|r| (r.target, r.met)).collect();
        assert_eq!(
            shown,
            [
                ("≤ 4".to_owned(), Some(true)),
                ("≤ 0.8 ms".to_owned(), Some(false)),
                ("≤ 64 MiB".to_owned(), Some(true)),
            ]
        );
    }
}
