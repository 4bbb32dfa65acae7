//! What checking a bundle reports: one [`Finding`] per check, naming the part it is
//! about, gathered in a [`Report`] by every check (the bundle's own, the key chains',
//! the mandates').

/// One check: the part it is about, whether it held, and what it found in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub part: String,
    pub ok: bool,
    pub words: String,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// What the bundle proves, in words (only meaningful when every finding held).
    pub proves: Vec<String>,
    /// What it cannot prove, as the bundle says.
    pub cannot: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        !self.findings.is_empty() && self.findings.iter().all(|f| f.ok)
    }

    pub(super) fn check(&mut self, part: &str, ok: bool, words: impl Into<String>) -> bool {
        self.findings.push(Finding {
            part: part.to_owned(),
            ok,
            words: words.into(),
        });
        ok
    }
}
