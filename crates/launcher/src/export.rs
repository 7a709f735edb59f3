//! One exporter per format: each view of a finished session or of a comparison is a type of
//! its own, in a file of its own, that turns the thing shown into text. Computing is
//! elsewhere (the analysis, `compare`'s estimates); an exporter only words and lays out.
//!
//! * a comparison (`compare::CompareReport`): `compare::{Table, Markdown, Csv, Json, Github,
//!   Junit, Bmf}`;
//! * a session (`report::SessionView`): `report::{Table, Headline, Markdown, Json, Html}`;
//! * the history's series (`history::Series`): `history::{List, One, Csv, Bmf, DataJs}`.

/// A view of `T` in one format.
pub trait Exporter<T: ?Sized> {
    /// `item` in this format, ready to print or write.
    fn export(&self, item: &T) -> anyhow::Result<String>;
}

/// One CSV field: quoted, with quotes doubled, when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// `lines` (a header and rows, each the same number of cells) as columns padded to their widest
/// cell, two spaces apart, the columns where `right(i)` holds aligned right; trailing spaces
/// trimmed, a newline after each line.
pub fn columns(lines: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    let count = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> =
        (0..count).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in lines {
        let padded: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(widths[i] - c.chars().count());
                if right(i) {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect();
        out.push_str(padded.join("  ").trim_end());
        out.push('\n');
    }
    out
}
