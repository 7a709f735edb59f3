//! Energy in words and lines: the session's one line about its sources, the table's energy
//! rows under the time rows, and `energy.csv`. Every figure of a fake-source session is marked
//! fake. Nothing is shown of energy when no source produced data, except the sources line.

use decode_baseline_wire::{
    analysis::pair_label,
    energy::{EnergyRatio, SessionEnergy},
    session::SessionReport,
};

/// The CSV's file name in the session folder (written beside the report page).
pub const CSV_FILE: &str = "energy.csv";

/// The session's one line about its energy sources: which were read, which are missing and
/// why, or that the figures are fake.
pub fn sources_line(energy: &SessionEnergy) -> String {
    if let Some(spec) = &energy.fake {
        return format!(
            "energy: FAKE source (DECODE_BASELINE_FAKE_ENERGY={spec}): test-only figures, not a measurement"
        );
    }
    let missing: Vec<String> =
        energy.sources.iter().filter_map(|s| Some(format!("{} missing ({})", s.source, s.missing.as_ref()?))).collect();
    let read: Vec<String> = energy
        .sources
        .iter()
        .filter(|s| s.missing.is_none())
        .map(|s| format!("{} ({})", s.source, s.domains.join(", ")))
        .collect();
    match (read.is_empty(), missing.is_empty()) {
        (true, true) => "energy: no source: none tried on this platform".to_owned(),
        (true, false) => format!("energy: no source: {}", missing.join(", ")),
        (false, true) => format!("energy: from {}", read.join(", ")),
        (false, false) => format!("energy: from {}; {}", read.join(", "), missing.join(", ")),
    }
}

/// Joules in the unit that keeps three significant figures readable.
pub fn human_joules(j: f64) -> String {
    let a = j.abs();
    if a >= 1.0 || a == 0.0 {
        format!("{j:.3} J")
    } else if a >= 1e-3 {
        format!("{:.3} mJ", j * 1e3)
    } else {
        format!("{:.3} µJ", j * 1e6)
    }
}

/// An energy ratio in words, for the table and the report page: ratio, interval, pairs, verdict
/// and p-value; `-` when there is none.
pub fn ratio_words(r: &Option<EnergyRatio>) -> String {
    r.map_or("-".to_owned(), |r| {
        format!(
            "{:.3} [{:.3}, {:.3}], n = {}: {} (p = {:.3})",
            r.ratio,
            r.lower,
            r.upper,
            r.pairs,
            r.verdict.words(),
            r.p_value
        )
    })
}

/// How a session's energy ratios were formed, and what their counts count: `("paired",
/// "pairs")` in an interleaved session, `("unpaired (non-interleaved order)", "requests")` otherwise.
pub fn pairing_words(report: &SessionReport) -> (&'static str, &'static str) {
    if crate::schedule::interleaves(&report.job) {
        ("paired", "pairs")
    } else {
        ("unpaired (non-interleaved order)", "requests")
    }
}

/// The energy rows of `run`'s table, then the sources line; empty for a session before
/// version 7.
pub fn table(report: &SessionReport) -> String {
    let Some(energy) = &report.energy else { return String::new() };
    let (pairing, unit) = pairing_words(report);
    let mut out = String::new();
    let fake = if energy.fake.is_some() { " FAKE" } else { "" };
    if !energy.cells.is_empty() {
        let w = energy.cells.iter().map(|c| c.cell.len()).max().unwrap_or(4).max(4);
        out.push_str(&format!(
            "\n{:<w$} {:<12} {:<24} {:>13} {:>27} {:>10} {:>13}\n",
            "cell", "adapter", "energy domain", "J/token", "95% CI", "tokens/J", "net of idle"
        ));
        for cell in &energy.cells {
            for d in &cell.domains {
                for (adapter, a) in &d.adapters {
                    let s = &a.joules_per_token;
                    out.push_str(&format!(
                        "{:<w$} {:<12} {:<24} {:>13} {:>27} {:>10.3} {:>13}{fake}\n",
                        cell.cell,
                        adapter.as_str(),
                        d.domain,
                        human_joules(s.median),
                        format!("[{}, {}]", human_joules(s.median_ci.lower), human_joules(s.median_ci.upper)),
                        a.tokens_per_joule,
                        a.net_joules_per_token.as_ref().map_or("-".to_owned(), |n| human_joules(n.median)),
                    ));
                    if a.dropped > 0 {
                        out.push_str(&format!(
                            "{:<w$} note: {} requests' energy dropped (counter reset or unreadable)\n",
                            "", a.dropped
                        ));
                    }
                }
                for (adapter, p) in &d.paired {
                    out.push_str(&format!(
                        "{:<w$} {} energy {pairing} ({}): {}{fake}\n",
                        cell.cell,
                        pair_label(adapter, &report.reference),
                        d.domain,
                        ratio_words(&p.all)
                    ));
                    if p.throttled_pairs > 0 {
                        out.push_str(&format!(
                            "{:<w$} without the {} throttled {unit}: {}{fake}\n",
                            "",
                            p.throttled_pairs,
                            ratio_words(&p.unthrottled)
                        ));
                    }
                    if p.dropped_pairs > 0 {
                        out.push_str(&format!(
                            "{:<w$} note: {} {unit} left out: their energy was dropped\n",
                            "", p.dropped_pairs
                        ));
                    }
                    if let Some(warning) = &p.warning {
                        out.push_str(&format!("{:<w$} warning: {warning}\n", ""));
                    }
                }
            }
        }
    }
    out.push_str(&format!("{}\n", sources_line(energy)));
    out
}

/// `energy.csv`: one line per figure (`joules_per_token`, `net_joules_per_token`,
/// `tokens_per_joule` per adapter; `energy_ratio`, `energy_ratio_unthrottled` per adapter
/// against the reference), with the column `fake` set for fake-source figures; `None` when no
/// source produced data.
pub fn csv(report: &SessionReport) -> Option<String> {
    let energy = report.energy.as_ref().filter(|e| !e.cells.is_empty())?;
    let fake = energy.fake.is_some();
    let mut out = String::from("cell,domain,adapter,reference,figure,value,lower,upper,n,fake\n");
    let mut line = |cell: &str,
                    domain: &str,
                    adapter: &str,
                    reference: &str,
                    figure: &str,
                    v: f64,
                    ci: Option<(f64, f64)>,
                    n: usize| {
        let (lo, hi) = ci.map_or((String::new(), String::new()), |(l, h)| (l.to_string(), h.to_string()));
        out.push_str(&format!("{cell},{domain},{adapter},{reference},{figure},{v},{lo},{hi},{n},{fake}\n"));
    };
    for cell in &energy.cells {
        for d in &cell.domains {
            for (adapter, a) in &d.adapters {
                let s = &a.joules_per_token;
                let ci = Some((s.median_ci.lower, s.median_ci.upper));
                line(&cell.cell, &d.domain, adapter.as_str(), "", "joules_per_token", s.median, ci, s.n);
                if let Some(n) = &a.net_joules_per_token {
                    let ci = Some((n.median_ci.lower, n.median_ci.upper));
                    line(&cell.cell, &d.domain, adapter.as_str(), "", "net_joules_per_token", n.median, ci, n.n);
                }
                line(&cell.cell, &d.domain, adapter.as_str(), "", "tokens_per_joule", a.tokens_per_joule, None, s.n);
            }
            for (adapter, p) in &d.paired {
                for (figure, r) in [("energy_ratio", &p.all), ("energy_ratio_unthrottled", &p.unthrottled)] {
                    if let Some(r) = r {
                        let reference = report.reference.as_str();
                        line(
                            &cell.cell,
                            &d.domain,
                            adapter.as_str(),
                            reference,
                            figure,
                            r.ratio,
                            Some((r.lower, r.upper)),
                            r.pairs,
                        );
                    }
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use decode_baseline_wire::energy::SourceState;

    use super::*;

    fn record(fake: Option<&str>, sources: &[(&str, Option<&str>, &[&str])]) -> SessionEnergy {
        SessionEnergy {
            fake: fake.map(str::to_owned),
            sources: sources
                .iter()
                .map(|(source, missing, domains)| SourceState {
                    source: (*source).into(),
                    missing: missing.map(str::to_owned),
                    domains: domains.iter().map(|d| (*d).to_owned()).collect(),
                })
                .collect(),
            idle: Vec::new(),
            cells: Vec::new(),
        }
    }

    #[test]
    fn the_sources_line_names_what_was_read_what_is_missing_and_a_fake() {
        let partial = record(None, &[("nvml", None, &["nvml:0", "nvml:1"]), ("powercap", Some("not root (…)"), &[])]);
        assert_eq!(sources_line(&partial), "energy: from nvml (nvml:0, nvml:1); powercap missing (not root (…))");
        let all = record(None, &[("powercap", None, &["powercap:package-0"])]);
        assert_eq!(sources_line(&all), "energy: from powercap (powercap:package-0)");
        let fake = record(Some("watts=5"), &[("fake", None, &["fake:0"])]);
        assert_eq!(
            sources_line(&fake),
            "energy: FAKE source (DECODE_BASELINE_FAKE_ENERGY=watts=5): test-only figures, not a measurement"
        );
        assert_eq!(sources_line(&record(None, &[])), "energy: no source: none tried on this platform");
    }

    #[test]
    fn joules_are_shown_in_a_readable_unit() {
        assert_eq!(human_joules(1.5), "1.500 J");
        assert_eq!(human_joules(0.0123), "12.300 mJ");
        assert_eq!(human_joules(4.2e-5), "42.000 µJ");
        assert_eq!(human_joules(0.0), "0.000 J");
    }
}
