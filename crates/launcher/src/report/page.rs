//! The report page: `index.html` in a session folder, one self-contained file (styles and every
//! figure inline, no script, nothing fetched), laid out to read on a phone as on a desktop.
//!
//! In reading order: the answer card (per case, each adapter against the reference: verdict,
//! ratio and interval, what the session could detect, and the case's agreement; the stored
//! decisions, worded by `report::answer` as the terminal words them), every figure of
//! [`crate::plot::session_figures`], the model and notes (the view's `bench` record, when `bench`
//! made the session), where each headline ratio comes from, `bench --ranks`'s table, the test's
//! profiles, the warnings and the
//! agreement; then, folded (`<details>`, which find-in-page still searches): every cell and
//! adapter (per-token median, interval, tokens/s derived from the median, p90, CV, prefill,
//! prompt tokens/s, time to first token, peak memory, and each ratio with its test), peak memory
//! per adapter, and the identity (versions, digests, backend, host). Wide tables scroll in their
//! own box, never the page; `decode-baseline-page-check` opens it in Chromium and checks that.
//! The page is well-formed XML (XHTML syntax), so tests and tools can parse it strictly. It is a
//! function of the [`SessionView`] alone: it reads no file.

use std::{fmt::Write as _, io::Write as _, os::unix::fs::PermissionsExt, path::Path};

use decode_baseline_wire::session::SessionReport;

use super::SessionView;
use crate::{
    duration::human_ns,
    export::Exporter,
    plot::{esc, Figure},
    session::{BenchRecord, ModelSource, Rows},
};

/// The page's file name in the session folder.
pub const PAGE: &str = "index.html";

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;padding:12px;max-width:1280px;color:#222;line-height:1.4}\
h1{font-size:1.15em;overflow-wrap:anywhere}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}\
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}table{border-collapse:collapse;font-size:.85em;white-space:nowrap;margin:.6em 0}\
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}th:first-child,td:first-child,td.l{text-align:left}\
td:first-child{white-space:normal;overflow-wrap:anywhere;min-width:8em}\
thead th{background:#f4f4f4}tr.warn td{background:#fff6e0}.note{background:#eef5ff;padding:6px 10px;border-left:4px solid #1f77b4}\
.problem{color:#a00000}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:.85em}\
dt{font-weight:600}dd{margin:0;word-break:break-all}figure{margin:1em 0}figure svg{width:100%;height:auto;border:1px solid #eee}\
figcaption{font-size:.8em;color:#555}summary h2{display:inline}#status,.legend{font-size:.85em;color:#444}\
table.answer{margin-top:.3em}tr.case th{text-align:left;white-space:normal;background:#f8f8f8}tr.case span{display:block;max-width:calc(100vw - 56px);font-weight:normal;font-size:.9em;color:#555}\
table.answer td:first-child{white-space:nowrap;min-width:0}\
td.verdict{font-weight:600;text-align:left}.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr));gap:0 16px}td.faster{color:#1a7f37}td.slower{color:#b00020}";

/// The page of `view`: its session, its tested rows (as the run table's) and `bench`'s records.
fn render(view: &SessionView<'_>) -> String {
    let (session, tested) = (view.report, &view.rows[..]);
    let rows = Rows::of(session);
    let figures = crate::plot::session_figures(session);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>decode-baseline {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&session.session_id)
    );
    let _ = writeln!(h, "<h1>decode-baseline session {}</h1>", esc(&session.session_id));
    let _ = writeln!(
        h,
        "<p id=\"status\">status <b>{:?}</b> · started {} · finished {} · wall {} · {} workers</p>",
        session.status,
        esc(&session.started_utc),
        esc(&session.finished_utc),
        human_ns(session.wall_ns as f64),
        session.workers.len()
    );
    // The answer, then the figures, then the tables; the identity folded.
    answer_section(&mut h, session, tested);
    figures_section(&mut h, &figures);
    model_section(&mut h, view.bench.as_ref());
    summary_section(&mut h, &rows, tested);
    decomposition_section(&mut h, session, &crate::compare::decided_settings(session));
    ranks_section(&mut h, view.ranks.as_deref());
    test_section(&mut h, session, tested);
    warnings_section(&mut h, session, &rows, tested);
    agreement_section(&mut h, &rows);
    memory_section(&mut h, &rows);
    super::energy::section(&mut h, session);
    identity_section(&mut h, session);
    h.push_str("</body>\n</html>\n");
    h
}

/// The report page: one self-contained HTML file.
pub struct Html;

impl Exporter<SessionView<'_>> for Html {
    fn export(&self, view: &SessionView<'_>) -> anyhow::Result<String> {
        Ok(render(view))
    }
}

/// Writes `index.html` into `dir` atomically (a temp file, then a rename: it is derived data, so
/// an existing page is replaced), and `energy.csv` beside it when a source produced data.
/// Returns the page's path.
pub fn write_page(view: &SessionView<'_>) -> anyhow::Result<std::path::PathBuf> {
    if let Some(csv) = crate::energy::csv(view.report) {
        write_derived(view.dir, crate::energy::CSV_FILE, &csv)?;
    }
    write_derived(view.dir, PAGE, &Html.export(view)?)
}

/// Writes `text` to `dir/name` atomically, replacing what was there (derived data).
fn write_derived(dir: &Path, name: &str, page: &str) -> anyhow::Result<std::path::PathBuf> {
    let path = dir.join(name);
    let write = || -> std::io::Result<()> {
        let mut temp = tempfile::Builder::new().prefix(&format!(".{name}.")).tempfile_in(dir)?;
        temp.write_all(page.as_bytes())?;
        // A temp file is created 0600; the page is for anyone who can read the session folder.
        temp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    };
    write().map_err(|err| anyhow::Error::new(err).context(format!("failed to write {}", path.display())))?;
    Ok(path)
}

/// `bench --ranks N`'s table of one process against the group (`req/distributed.md`), on the
/// group session's page, when the bench wrote it into the session's folder.
fn ranks_section(h: &mut String, table: Option<&str>) {
    let Some(table) = table else { return };
    let _ = writeln!(
        h,
        "<section id=\"ranks\">\n<h2>By ranks</h2>\n<pre>{}</pre>\n<p>The same model as one process (its own session) \
         and as this session's group: per-token time at the group over one process, tested (Yuen on the request medians \
         of the two sessions); how each adapter's ratio to the reference moves; what each rank reads and sums.</p>\n</section>",
        esc(table)
    );
}

/// The answer first (`answer`): per case, each row's ratio, interval, verdict and detectable
/// difference, and the case's agreement.
fn answer_section(h: &mut String, session: &SessionReport, tested: &[crate::compare::Row]) {
    let Some(analysis) = &session.analysis else { return };
    let answers = super::answer::of(session, analysis, tested);
    if answers.is_empty() {
        return;
    }
    // One table, the verdict in the second column so that a phone shows it without scrolling;
    // each case's agreement on its heading row.
    let _ = writeln!(
        h,
        "<section id=\"answer\">\n<h2>Answer</h2>\n<p class=\"legend\">{} (Holm across the rows); detectable: the \
         smallest difference the session would see with {:.0} % power.</p>\n<div class=\"scroll\">\n<table class=\"answer\">\n\
         <thead><tr><th>cell</th><th>verdict</th><th>ratio [interval]</th><th>detectable</th><th>pair</th></tr></thead>\n<tbody>",
        esc(&upper_first(&super::answer::heading(tested))),
        100.0 * super::answer::tested_config(tested).power
    );
    for answer in &answers {
        let _ = writeln!(
            h,
            "<tr class=\"case\"><th colspan=\"5\">{} <span>{}</span></th></tr>",
            esc(&answer.case),
            esc(&answer.agreement.join("; "))
        );
        for row in &answer.rows {
            let verdict = row.found.verdict();
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"verdict {}\" data-verdict=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&row.what),
                verdict.replace(' ', "-"),
                esc(verdict),
                esc(verdict),
                esc(&row.found.figures()),
                esc(&row.found.detectable_amount()),
                esc(&row.pair)
            );
        }
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
    // What changes the reading of these verdicts, in full, beside them.
    let notes = super::answer::session_notes(session, analysis);
    let warnings = answers.iter().flat_map(|a| &a.warnings);
    for line in notes.iter().chain(warnings) {
        let _ = writeln!(h, "<p class=\"problem\">{}</p>", esc(line));
    }
    h.push_str("</section>\n");
}

/// `s` with its first letter in upper case.
fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

fn model_section(h: &mut String, bench: Option<&BenchRecord>) {
    let Some(b) = bench else { return };
    h.push_str("<section id=\"model\">\n<h2>Model</h2>\n<dl>\n");
    let mut item = |k: &str, v: &str| {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    };
    item("model", &b.model);
    match &b.source {
        ModelSource::Folder { path } => item("source", &format!("folder {}", path.display())),
        ModelSource::Hub { repo_id, revision, commit, cache } => {
            item("source", &format!("Hugging Face {repo_id}, revision {revision}"));
            item("commit measured", commit);
            item("cache", &cache.display().to_string());
        }
    }
    item("folder", &b.model_dir.display().to_string());
    item("case", &b.case_id);
    item("architecture", &b.architecture);
    item("max_position_embeddings", &b.max_position_embeddings.map_or("not given".into(), |m| m.to_string()));
    let join = |v: &[usize]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        }
    };
    item("prompt lengths", &join(&b.prompt_lengths));
    item("context depths", &join(&b.depths));
    item("adapters run", &b.adapters.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", "));
    item("prompt source", &b.prompt_source);
    h.push_str("</dl>\n");
    for note in &b.notes {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(note));
    }
    h.push_str("</section>\n");
}

/// `compare`'s per-token test of `adapter` in `cell`, by the label `<adapter>/<reference>`.
fn tested_row<'a>(tested: &'a [crate::compare::Row], cell: &str, pair: &str) -> Option<&'a crate::compare::Row> {
    tested.iter().find(|r| {
        r.cell == cell
            && r.quantity == crate::compare::Quantity::PerToken
            && r.adapter
                .as_ref()
                .zip(r.against.as_ref())
                .is_some_and(|(a, b)| decode_baseline_wire::analysis::pair_label(a, b) == pair)
    })
}

/// The test's cells of a ratio row: verdict, ratio [interval], MDE, A/A ratios, rule.
fn test_cells(row: Option<&crate::compare::Row>) -> [String; 5] {
    use crate::compare::RowResult;
    match row.map(|r| &r.outcome) {
        Some(RowResult::Compared { decision: d, aa, .. }) => [
            d.verdict.words().to_owned(),
            format!("{:.3} [{:.3}, {:.3}]", d.ratio, d.ci.lower, d.ci.upper),
            format!("±{:.1} %", 100.0 * d.mde),
            aa.iter().filter_map(|r| r.ratio()).map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(", "),
            format!("{}; {}", d.rule.describe(), crate::compare::error_words(d)),
        ],
        Some(RowResult::NotCompared { reason }) => {
            [format!("not tested: {reason}"), String::new(), String::new(), String::new(), String::new()]
        }
        None => Default::default(),
    }
}

fn summary_section(h: &mut String, rows: &Rows, tested: &[crate::compare::Row]) {
    open_folded(h, "summary", "Every cell and adapter: times, ratios and each row's test");
    h.push_str("<div class=\"scroll\">\n<table id=\"summary-table\">\n<thead><tr>");
    for head in [
        "cell",
        "adapter",
        "L",
        "per token (median)",
        "95% CI",
        "tokens/s*",
        "p90",
        "CV",
        "prefill",
        "prompt tokens/s",
        "TTFT",
        "peak memory",
    ] {
        let _ = write!(h, "<th>{}</th>", esc(head));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &rows.rows {
        let class = if row.warnings.is_empty() { "" } else { " class=\"warn\"" };
        let _ = writeln!(
            h,
            "<tr{class} data-cell=\"{}\" data-adapter=\"{}\"><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&row.cell),
            esc(&row.adapter),
            esc(&row.cell),
            esc(&row.adapter),
            row.prompt_len.map_or("-".into(), |l| l.to_string()),
            human_ns(row.per_token_ns),
            human_ns(row.ci_ns.0),
            human_ns(row.ci_ns.1),
            row.tokens_per_s(),
            human_ns(row.p90_ns),
            row.cv.map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
            row.prefill_ns.map_or("-".into(), human_ns),
            row.prompt_tokens_per_s().map_or("-".into(), |v| format!("{v:.0}")),
            row.first_token_ns.map_or("-".into(), human_ns),
            row.peak_memory_bytes.map_or("-".into(), mib),
        );
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
    h.push_str("<p>* tokens/s = 1 / the per-token median: derived from the median, not an averaged rate. TTFT: request start to the first token. Prompt tokens/s: L / median prefill.</p>\n");
    let split: Vec<_> = rows.rows.iter().filter_map(|r| r.split.map(|s| (r, s))).collect();
    if !split.is_empty() {
        h.push_str("<div class=\"scroll\">\n<table id=\"split-table\">\n<thead><tr><th>cell</th><th>adapter</th><th>graph build</th><th>MLX evaluation</th><th>host overhead</th></tr></thead>\n<tbody>\n");
        for (row, (build, eval, overhead)) in split {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1} %</td></tr>",
                esc(&row.cell),
                esc(&row.adapter),
                human_ns(build),
                human_ns(eval),
                overhead * 100.0
            );
        }
        h.push_str("</tbody>\n</table>\n</div>\n");
    }
    let cold: Vec<_> = rows.rows.iter().filter_map(|r| r.cold.map(|c| (r, c))).collect();
    if !cold.is_empty() {
        h.push_str("<div class=\"scroll\">\n<table id=\"cold-table\">\n<thead><tr><th>cell</th><th>adapter</th><th>cold per token</th><th>measured per token</th><th>cold prefill</th><th>measured prefill</th><th>first requests</th></tr></thead>\n<tbody>\n");
        for (row, c) in cold {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&row.cell),
                esc(&row.adapter),
                human_ns(c.per_token_ns),
                human_ns(row.per_token_ns),
                human_ns(c.prefill_ns),
                row.prefill_ns.map_or("-".into(), human_ns),
                c.requests
            );
        }
        h.push_str("</tbody>\n</table>\n</div>\n<p>Cold: the first request of each run (imports paid, caches and any compiled trace not yet warm), kept out of every statistic.</p>\n");
    }
    if !rows.ratios.is_empty() {
        h.push_str("<div class=\"scroll\">\n<table id=\"ratio-table\">\n<thead><tr><th>cell</th><th>adapter/reference</th><th>ratio (median)</th><th>95% CI (bootstrap)</th><th>verdict</th><th>test ratio [interval]</th><th>detectable</th><th>A/A</th><th>rule</th></tr></thead>\n<tbody>\n");
        for (cell, pair, ratio, lo, hi) in &rows.ratios {
            let [verdict, test, mde, aa, rule] = test_cells(tested_row(tested, cell, pair));
            let _ = writeln!(
                h,
                "<tr data-cell=\"{0}\"><td>{0}</td><td>{1}</td><td>{ratio:.3}</td><td>[{lo:.3}, {hi:.3}]</td><td class=\"l\">{2}</td><td>{3}</td><td>{4}</td><td>{5}</td><td class=\"l\">{6}</td></tr>",
                esc(cell),
                esc(pair),
                esc(&verdict),
                esc(&test),
                esc(&mde),
                esc(&aa),
                esc(&rule)
            );
        }
        h.push_str("</tbody>\n</table>\n</div>\n");
    }
    close_folded(h);
}

/// Opens a section `id` whose body is folded under `title` (a browser's find-in-page still
/// searches it, and opens it on a match).
fn open_folded(h: &mut String, id: &str, title: &str) {
    let _ = writeln!(h, "<section id=\"{id}\">\n<details>\n<summary><h2>{}</h2></summary>", esc(title));
}

fn close_folded(h: &mut String) {
    h.push_str("</details>\n</section>\n");
}

/// Every headline ratio taken apart (`crate::decomposition`): a table of the ratio, the same
/// synchronous work (fixed-continuation), the headline-only part, and the adapter's host
/// overhead in the headline cell where its worker records it.
fn decomposition_section(h: &mut String, session: &SessionReport, config: &crate::stats::DecisionConfig) {
    let parts = crate::decomposition::of_session(session, config);
    if parts.is_empty() {
        return;
    }
    h.push_str("<section id=\"decomposition\">\n<h2>Where each headline and TTFT ratio comes from</h2>\n<div class=\"scroll\">\n<table id=\"decomposition-table\">\n<thead><tr><th>cells</th><th>adapter/reference</th><th>headline</th><th>same synchronous work (fixed-continuation)</th><th>headline-only part (look-ahead, sampling, streaming)</th><th>host overhead (headline)</th></tr></thead>\n<tbody>\n");
    for p in &parts {
        let _ = writeln!(
            h,
            "<tr data-cell=\"{0}\"><td>{0}</td><td>{1}/{2}</td><td class=\"l\">{3}</td><td class=\"l\">{4}</td><td class=\"l\">{5}</td><td>{6}</td></tr>",
            esc(&p.cells),
            esc(p.adapter.as_str()),
            esc(p.reference.as_str()),
            esc(&crate::decomposition::words(&p.headline)),
            esc(&crate::decomposition::words(&p.fixed)),
            esc(&crate::decomposition::words(&p.headline_only)),
            p.split.map_or("-".into(), |s| format!("{:.1} %", 100.0 * s.host_overhead)),
        );
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
    let first_tokens: Vec<_> = parts.iter().filter_map(|p| p.first_token.as_ref().map(|t| (p, t))).collect();
    if !first_tokens.is_empty() {
        h.push_str("<div class=\"scroll\">\n<table id=\"first-token-decomposition-table\">\n<thead><tr><th>cells</th><th>adapter/reference</th><th>TTFT (headline)</th><th>prefill structure (fixed-continuation)</th><th>around the prefill (set-up, look-ahead dispatch, sampling)</th></tr></thead>\n<tbody>\n");
        for (p, t) in first_tokens {
            let _ = writeln!(
                h,
                "<tr data-cell=\"{0}\"><td>{0}</td><td>{1}/{2}</td><td class=\"l\">{3}</td><td class=\"l\">{4}</td><td class=\"l\">{5}</td></tr>",
                esc(&p.cells),
                esc(p.adapter.as_str()),
                esc(p.reference.as_str()),
                esc(&crate::decomposition::words(&t.headline)),
                esc(&crate::decomposition::words(&t.prefill)),
                esc(&crate::decomposition::words(&t.around)),
            );
        }
        h.push_str("</tbody>\n</table>\n</div>\n");
    }
    // The parts depend on the CPUs the loops had: `bench --cpus 0 --cpus all` sets two side by side.
    let _ = writeln!(
        h,
        "<p>{} ({}; another placement is another session: bench --cpus 0 --cpus all)</p>\n</section>",
        esc(crate::decomposition::EXPLANATION),
        esc(&crate::session::placement_line(session.placement.as_ref()))
    );
}

/// How the verdicts were reached beyond each row's rule: the noise profiles the rows used (or
/// that none was), and the `--until-decided` record when the session had one.
fn test_section(h: &mut String, session: &SessionReport, tested: &[crate::compare::Row]) {
    h.push_str("<section id=\"test\">\n<h2>Test</h2>\n<ul>\n");
    let mut lines = crate::compare::profile_lines(tested);
    if lines.is_empty() {
        lines.push(
            "noise profile: none used; each verdict's error is its row's own (the rule column says which)".into(),
        );
    }
    lines.extend(session.sequential.iter().flat_map(super::sequential_lines));
    for line in lines {
        let _ = writeln!(h, "<li>{}</li>", esc(&line));
    }
    h.push_str("</ul>\n</section>\n");
}

fn warnings_section(h: &mut String, session: &SessionReport, rows: &Rows, tested: &[crate::compare::Row]) {
    h.push_str("<section id=\"warnings\">\n<h2>Warnings</h2>\n<ul>\n");
    let mut any = false;
    // An unpinned session says so first, as the table does.
    for line in crate::session::replaced_lines(session) {
        any = true;
        let _ = writeln!(h, "<li class=\"problem\">{}</li>", esc(&line));
    }
    for problem in &session.problems {
        any = true;
        let _ = writeln!(h, "<li class=\"problem\">{}</li>", esc(problem));
    }
    for row in &rows.rows {
        for warning in &row.warnings {
            any = true;
            let _ = writeln!(h, "<li>{} {}: {}</li>", esc(&row.cell), esc(&row.adapter), esc(warning));
        }
    }
    for row in tested {
        if let crate::compare::RowResult::Compared { warnings, .. } = &row.outcome {
            let adapter = row.adapter.as_ref().map_or("", |a| a.as_str());
            for warning in warnings {
                any = true;
                let _ = writeln!(h, "<li>{} {}: {}</li>", esc(&row.subject()), esc(adapter), esc(warning));
            }
        }
    }
    if !any {
        h.push_str("<li>none</li>\n");
    }
    h.push_str("</ul>\n</section>\n");
}

fn agreement_section(h: &mut String, rows: &Rows) {
    h.push_str("<section id=\"agreement\">\n<h2>Agreement</h2>\n<ul>\n");
    for line in &rows.agreement {
        let _ = writeln!(h, "<li>{}</li>", esc(line));
    }
    if rows.agreement.is_empty() {
        h.push_str("<li>no cell compared both adapters</li>\n");
    }
    h.push_str("</ul>\n</section>\n");
}

fn memory_section(h: &mut String, rows: &Rows) {
    open_folded(h, "memory", "Peak memory per adapter");
    h.push_str("<table id=\"memory-table\">\n<thead><tr><th>adapter</th><th>largest per-request peak</th></tr></thead>\n<tbody>\n");
    for (adapter, bytes) in &rows.peak_memory {
        let _ = writeln!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(adapter), mib(*bytes));
    }
    h.push_str("</tbody>\n</table>\n");
    close_folded(h);
}

fn identity_section(h: &mut String, session: &SessionReport) {
    open_folded(h, "identity", "Identity");
    h.push_str("<dl>\n");
    let mut item = |k: &str, v: &str| {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    };
    item("manifest", &session.manifest_path.display().to_string());
    item("manifest sha256", &session.manifest_sha256.to_string());
    let host = session
        .host
        .as_ref()
        .map_or("? (? ?, ? CPUs)".to_owned(), |h| format!("{} ({} {}, {} CPUs)", h.hostname, h.os, h.arch, h.cpus));
    item("host", &host);
    let placement = crate::session::placement_line(session.placement.as_ref());
    item("placement", placement.trim_start_matches("placement: "));
    let group = crate::session::group_line(session);
    item("group", group.trim_start_matches("group: "));
    if let Some(device) = &session.device {
        item("device", &format!("{} on {} ({})", device.name, device.backend.as_str(), device.device.as_str()));
    }
    let mut seen = Vec::new();
    for worker in &session.workers {
        let Some(identity) = worker.report.as_ref().and_then(|r| r.identity.as_ref()) else { continue };
        if seen.contains(&&worker.adapter) {
            continue;
        }
        seen.push(&worker.adapter);
        let a = worker.adapter.as_str();
        let backend = identity.backend.map_or("not recorded", |b| b.as_str());
        item(&format!("{a}: backend"), &format!("{backend}, device {}", identity.device.as_str()));
        item(&format!("{a}: mlx / mlx_lm"), &format!("{} / {}", identity.mlx_version, identity.mlx_lm_version));
        item(&format!("{a}: libmlx"), &format!("{} sha256 {}", identity.libmlx_path, identity.libmlx_sha256));
        item(&format!("{a}: mlx_lm freeze sha256"), &identity.mlx_lm_freeze_sha256.to_string());
        item(&format!("{a}: lock sha256"), &identity.lock_sha256.to_string());
        item(&format!("{a}: worker sources sha256"), &identity.worker_sources_sha256.to_string());
        item(&format!("{a}: code version"), &identity.code_version);
    }
    if let Some(files) = &session.model_files {
        for (case, files) in files {
            for (name, digest) in files {
                item(&format!("{case}/{name}"), &digest.to_string());
            }
        }
    }
    h.push_str("</dl>\n");
    close_folded(h);
}

fn figures_section(h: &mut String, figures: &[Figure]) {
    // Two to a row where the window is wide enough, one on a phone.
    h.push_str("<section id=\"figures\">\n<h2>Figures</h2>\n<div class=\"figures\">\n");
    for figure in figures {
        // The SVG documents carry an XML declaration, which may not appear inside a page.
        let svg = match figure.svg.split_once('\n') {
            Some((declaration, rest)) if declaration.starts_with("<?xml") => rest,
            _ => figure.svg.as_str(),
        };
        let _ = writeln!(
            h,
            "<figure id=\"fig-{0}\" data-figure=\"{0}\">\n{svg}<figcaption>{0}</figcaption>\n</figure>",
            esc(&figure.name)
        );
    }
    if figures.is_empty() {
        h.push_str("<p>no cell has measured steps</p>\n");
    }
    h.push_str("</div>\n</section>\n");
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of the page's ratio table, each as its cells' text.
    fn ratio_rows(page: &str) -> Vec<Vec<String>> {
        let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
        let doc = roxmltree::Document::parse_with_options(page, options).expect("well-formed");
        doc.descendants()
            .filter(|n| n.has_tag_name("table") && n.attribute("id") == Some("ratio-table"))
            .flat_map(|t| t.descendants().filter(|n| n.has_tag_name("tr") && n.attribute("data-cell").is_some()))
            .map(|tr| {
                tr.children().filter(|n| n.has_tag_name("td")).map(|td| td.text().unwrap_or("").to_owned()).collect()
            })
            .collect()
    }

    #[test]
    fn the_ratio_table_carries_the_tests_verdict_and_the_warnings_its_aa_results() {
        // The recorded session A (alternate order, loaded host) as four runs per adapter: compare's
        // verdicts per cell, the A/A results beside the headline row, and the A/A warning in the
        // warnings section.
        let path = crate::launcher::session_job::repo_root().join("tests/data/sessions/back-to-back-a/session.json");
        let recorded = crate::session::load_session(&path).unwrap().report;
        let tmp = tempfile::tempdir().unwrap();
        let repeated = crate::session::fixtures::repeated(&recorded, 4);
        let view = |session| SessionView {
            report: session,
            rows: crate::compare::tested_without_profile(session).into(),
            dir: tmp.path(),
            bench: None,
            ranks: None,
        };
        let page = render(&view(&repeated));
        let rows = ratio_rows(&page);
        assert_eq!(rows.len(), 2, "{page}");
        assert_eq!((rows[0][4].as_str(), rows[1][4].as_str()), ("faster", "slower"), "{rows:?}");
        assert!(rows[0][5].starts_with("0.389 ["), "{rows:?}");
        assert_eq!(rows[0][7], "1.390, 1.286", "the headline cell's A/A results");
        assert!(rows[0][8].contains("error holds run-to-run effects"), "{rows:?}");
        assert!(page.contains("A/A controlled: one rerun of the same code moved the ratio by +39.0 %"), "{page}");
        // As recorded, one run per adapter: the same ratios, no verdict, and the way to one.
        let page = render(&view(&recorded));
        let rows = ratio_rows(&page);
        assert_eq!(rows.len(), 2, "{page}");
        assert_eq!((rows[0][4].as_str(), rows[1][4].as_str()), ("inconclusive", "inconclusive"), "{rows:?}");
        assert!(rows[0][5].starts_with("0.389 [0.305, 0.496]"), "{rows:?}");
        assert!(rows[0][8].contains("no verdict: one run per side cannot show run-to-run effects"), "{rows:?}");
    }
}
