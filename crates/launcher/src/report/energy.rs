//! The report page's energy section: per cell, adapter and domain the joules per token beside
//! the time per token, tokens per joule, the energy net of idle, each adapter's paired energy
//! ratio with and without the throttled pairs, the warnings and the one line about the sources.
//! The energy figures (`plot::energy`) are among the page's figures. Every figure of a fake-source session is marked FAKE. Without an energy record
//! (sessions before version 7) there is no section; without data, only the sources line.

use std::fmt::Write as _;

use crate::energy::{human_joules, ratio_words, sources_line};
use decode_baseline_wire::{analysis::pair_label, session::SessionReport};

use crate::{duration::human_ns, plot::esc};

/// Appends the section to `h`.
pub fn section(h: &mut String, session: &SessionReport) {
    let Some(energy) = &session.energy else { return };
    h.push_str("<section id=\"energy\">\n<h2>Energy</h2>\n");
    let class = if energy.fake.is_some() { "problem" } else { "note" };
    let _ = writeln!(h, "<p class=\"{class}\" id=\"energy-sources\">{}</p>", esc(&sources_line(energy)));
    if energy.cells.is_empty() {
        h.push_str("</section>\n");
        return;
    }
    let fake = if energy.fake.is_some() { " FAKE" } else { "" };
    let per_token = |cell: &str, adapter: &decode_baseline_wire::Adapter| {
        let cells = session.analysis.iter().flat_map(|a| &a.cells);
        cells
            .filter(|c| c.cell == cell)
            .find_map(|c| c.adapters.get(adapter))
            .map_or("-".to_owned(), |s| human_ns(s.per_token_ns.median))
    };
    h.push_str("<div class=\"scroll\">\n<table id=\"energy-table\">\n<thead><tr>");
    for head in [
        "cell",
        "adapter",
        "domain",
        "per token (time)",
        "J/token (median)",
        "95% CI",
        "tokens/J*",
        "net of idle",
        "dropped",
        "throttled",
    ] {
        let _ = write!(h, "<th>{}</th>", esc(head));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for cell in &energy.cells {
        for d in &cell.domains {
            for (adapter, a) in &d.adapters {
                let s = &a.joules_per_token;
                let _ = writeln!(
                    h,
                    "<tr data-cell=\"{0}\" data-adapter=\"{1}\"><td>{0}</td><td class=\"l\">{1}</td><td class=\"l\">{2}</td><td>{3}</td><td>{4}{fake}</td><td>[{5}, {6}]</td><td>{7:.3}</td><td>{8}{fake}</td><td>{9}</td><td>{10}</td></tr>",
                    esc(&cell.cell),
                    esc(adapter.as_str()),
                    esc(&d.domain),
                    per_token(&cell.cell, adapter),
                    esc(&human_joules(s.median)),
                    esc(&human_joules(s.median_ci.lower)),
                    esc(&human_joules(s.median_ci.upper)),
                    a.tokens_per_joule,
                    a.net_joules_per_token.as_ref().map_or("-".to_owned(), |n| esc(&human_joules(n.median))),
                    a.dropped,
                    a.throttled,
                );
            }
        }
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
    h.push_str("<p>* tokens/J = 1 / the J/token median. J/token: a request's energy (prefill included) over its output tokens. Net of idle: less the idle power before the group times the request's wall time.</p>\n");
    let (pairing, unit) = crate::energy::pairing_words(session);
    let _ = writeln!(
        h,
        "<div class=\"scroll\">\n<table id=\"energy-ratio-table\">\n<thead><tr><th>cell</th><th>adapter/reference</th><th>domain</th><th>energy ratio, {pairing} (95% t-interval)</th><th>without throttled {unit}</th><th>throttled {unit}</th><th>{unit} dropped</th></tr></thead>\n<tbody>"
    );
    let mut warnings = Vec::new();
    for cell in &energy.cells {
        for d in &cell.domains {
            for (adapter, p) in &d.paired {
                let _ = writeln!(
                    h,
                    "<tr data-cell=\"{0}\"><td>{0}</td><td>{1}</td><td class=\"l\">{2}</td><td>{3}{fake}</td><td>{4}{fake}</td><td>{5} of {6}</td><td>{7}</td></tr>",
                    esc(&cell.cell),
                    esc(&pair_label(adapter, &session.reference)),
                    esc(&d.domain),
                    esc(&ratio_words(&p.all)),
                    esc(&ratio_words(&p.unthrottled)),
                    p.throttled_pairs,
                    p.pairs,
                    p.dropped_pairs,
                );
                warnings.extend(
                    p.warning.iter().map(|w| {
                        format!("{} {} ({}): {w}", cell.cell, pair_label(adapter, &session.reference), d.domain)
                    }),
                );
            }
        }
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
    for w in warnings {
        let _ = writeln!(h, "<p class=\"problem\">warning: {}</p>", esc(&w));
    }
    h.push_str("</section>\n");
}
