//! `compare --format csv`: one line per row (the mismatch list goes to stderr, so stdout stays
//! one table).

use crate::export::{csv_field, Exporter};
use crate::session::serde_word;

use decode_baseline_wire::compare::{CompareReport, RowResult};

/// CSV, one line per time row; numbers unformatted (ns, plain ratios). The energy rows are in
/// the JSON (and each session's `energy.csv`), not here: they have other columns.
pub struct Csv;

impl Exporter<CompareReport> for Csv {
    fn export(&self, report: &CompareReport) -> anyhow::Result<String> {
        Ok(csv(report))
    }
}

fn csv(report: &CompareReport) -> String {
    let mut out = String::from(
        "cell,mode,quantity,adapter,basis,against,numerator,denominator,numerator_median_ns,denominator_median_ns,\
         numerator_requests,denominator_requests,ratio,ci_lower,ci_upper,confidence,rule,error,se,df,p_value,\
         holm_level,equivalence_p_value,margin,mde,aa_ratios,judged,verdict,reason\n",
    );
    let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for row in &report.rows {
        let mut f = vec![
            row.cell.clone(),
            row.mode.as_str().to_owned(),
            row.quantity.as_str().to_owned(),
            row.adapter.as_ref().map_or(String::new(), |a| a.as_str().to_owned()),
            serde_word(&row.basis),
            row.against.as_ref().map_or(String::new(), |a| a.as_str().to_owned()),
            row.numerator.label.clone(),
            row.denominator.label.clone(),
            num(row.numerator.median_ns),
            num(row.denominator.median_ns),
            row.numerator.requests.to_string(),
            row.denominator.requests.to_string(),
        ];
        match &row.outcome {
            RowResult::Compared { decision: d, aa, warnings, .. } => {
                let aa_ratios: Vec<String> = aa.iter().filter_map(|r| r.ratio()).map(|x| format!("{x}")).collect();
                f.extend([
                    format!("{}", d.ratio),
                    format!("{}", d.ci.lower),
                    format!("{}", d.ci.upper),
                    format!("{}", d.ci.confidence),
                    serde_word(&d.rule),
                    serde_word(&d.error),
                    format!("{}", d.se),
                    format!("{}", d.df),
                    format!("{}", d.p_value),
                    format!("{}", d.holm_level),
                    format!("{}", d.equivalence_p_value),
                    format!("{}", d.config.margin),
                    format!("{}", d.mde),
                    aa_ratios.join(" "),
                    row.judged.to_string(),
                    serde_word(&d.verdict),
                    warnings.join("; "),
                ]);
            }
            RowResult::NotCompared { reason } => {
                f.extend(std::iter::repeat_n(String::new(), 14));
                f.extend([row.judged.to_string(), "not_compared".to_owned(), reason.clone()]);
            }
        }
        out.push_str(&f.iter().map(|s| csv_field(s)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}
