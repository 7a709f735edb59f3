//! `decode-baseline history`: sessions recorded by `history import` form one series, the change
//! point is found at the first session of a 5 % step and nowhere in the sessions before it, and
//! every export carries the series; bad input names what was wrong.

use std::path::Path;
use std::process::Command;

use crate::compare::{write_session, Synth, FIXED, HEADLINE};
use crate::util;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn history(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let out = Command::new(util::binary()).arg("history").args(args).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `n` sessions, the i-th started i minutes after midnight, with controlled at `level` × stock in
/// the headline cell (a small deterministic scatter around it) and equal in the fixed one.
fn sessions(root: &Path, first: usize, n: usize, level: f64) {
    for i in first..first + n {
        let scatter = [1.0, 1.004, 0.997, 1.002, 0.999][i % 5];
        let mut report =
            Synth::new("s", vec![(HEADLINE, 600_000.0 * level * scatter, 600_000.0), (FIXED, 600_000.0, 600_000.0)])
                .report();
        report.session_id = format!("20260101T{:02}{:02}00Z-{i}", i / 60, i % 60);
        report.started_utc = format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60);
        write_session(root, &report);
    }
}

#[test]
fn import_finds_the_step_and_none_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("out");
    sessions(&root, 0, 16, 1.0);
    let imported = history(&[&"import", &root]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    assert!(imported.stdout.contains("history import: 16 session(s) recorded, 0 skipped"), "{}", imported.stdout);
    let db = root.join("history.sqlite");
    assert!(db.is_file());

    // A/A: two series (headline and fixed continuation), no change in either.
    let list = history(&[&"--root", &root]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two series:\n{}", list.stdout);
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.split_whitespace().nth(1) == Some("16") && l.split_whitespace().nth(2) == Some("0")),
        "{}",
        list.stdout
    );

    // Then a 5 % step in the headline cell, recorded again with the first ones (idempotent).
    sessions(&root, 16, 10, 1.05);
    assert_eq!(history(&[&"import", &root]).code, 0);
    let one = history(&[&"--root", &db, &"--series", &format!("{HEADLINE} controlled/stock")]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    let changes: Vec<&str> = one.stdout.lines().filter(|l| l.starts_with("change at session")).collect();
    assert_eq!(changes.len(), 1, "{}", one.stdout);
    assert!(
        changes[0].starts_with("change at session 20260101T001600Z-16 (point 17 of 26): after / before 1.05"),
        "{}",
        changes[0]
    );
    let marked: Vec<&str> = one.stdout.lines().filter(|l| l.contains("◀ change")).collect();
    assert_eq!(marked.len(), 1);
    assert!(marked[0].starts_with("17 "), "{}", marked[0]);
    let fixed = history(&[&"--root", &root, &"--series", &format!("{FIXED} controlled/stock")]);
    assert!(fixed.stdout.contains("no change point"), "{}", fixed.stdout);

    // Exports: Otava's CSV (one line per point, the change marked), BMF of the newest points,
    // data.js with one entry per session.
    let csv = history(&[&"--root", &root, &"--format", &"csv"]);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert!(lines[0].starts_with("time,commit,"), "{}", lines[0]);
    assert_eq!(lines.len(), 1 + 2 * 26);
    let marked: Vec<&&str> = lines.iter().filter(|l| !l.ends_with(',')).skip(1).collect();
    assert_eq!(marked.len(), 1, "one line carries the change: {}", csv.stdout);
    assert!(marked[0].contains("20260101T001600Z-16"), "{}", marked[0]);
    let bmf: serde_json::Value =
        serde_json::from_str(&history(&[&"--root", &root, &"--format", &"bmf"]).stdout).unwrap();
    let newest = bmf[format!("{HEADLINE} controlled/stock")]["ratio"]["value"].as_f64().unwrap();
    assert!((newest - 1.05).abs() < 0.01, "{bmf}");
    let js = history(&[&"--root", &root, &"--format", &"data-js"]).stdout;
    let json = js.strip_prefix("window.BENCHMARK_DATA = ").and_then(|s| s.trim_end().strip_suffix(';')).unwrap();
    let data: serde_json::Value = serde_json::from_str(json).unwrap();
    let entries = data["entries"]["decode-baseline"].as_array().unwrap();
    assert_eq!(entries.len(), 26);
    assert_eq!(entries[0]["benches"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_input_names_what_was_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = history(&[&"--root", &tmp.path()]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("no history at") && missing.stderr.contains("history import"),
        "{}",
        missing.stderr
    );

    let root = tmp.path().join("out");
    sessions(&root, 0, 3, 1.0);
    assert_eq!(history(&[&"import", &root]).code, 0);
    let ambiguous = history(&[&"--root", &root, &"--series", &"controlled/stock"]);
    assert_eq!(ambiguous.code, 2);
    assert!(ambiguous.stderr.contains("2 series match"), "{}", ambiguous.stderr);
    let none = history(&[&"--root", &root, &"--series", &"nothing-like-it"]);
    assert_eq!(none.code, 2);
    let alpha = history(&[&"--root", &root, &"--alpha", &"1.5"]);
    assert_eq!(alpha.code, 2);
    assert!(alpha.stderr.contains("--alpha: expected a number between 0 and 1, got 1.5"), "{}", alpha.stderr);

    let not_a_db = tmp.path().join("notes.txt");
    std::fs::write(&not_a_db, "not SQLite at all, just some words to fill a page of it").unwrap();
    let garbage = history(&[&"--root", &not_a_db]);
    assert_eq!(garbage.code, 2, "{}", garbage.stderr);
    assert!(garbage.stderr.contains("not a usable SQLite database"), "{}", garbage.stderr);
    assert_eq!(std::fs::read_to_string(&not_a_db).unwrap(), "not SQLite at all, just some words to fill a page of it");

    // An empty file reads as an empty SQLite database: refused, and left empty.
    let blank = tmp.path().join("blank.sqlite");
    std::fs::write(&blank, "").unwrap();
    let none_yet = history(&[&"--root", &blank]);
    assert_eq!(none_yet.code, 2, "{}", none_yet.stderr);
    assert!(none_yet.stderr.contains("expected the tables `sessions` and `points`"), "{}", none_yet.stderr);
    assert_eq!(std::fs::metadata(&blank).unwrap().len(), 0, "nothing written to it");

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let nothing = history(&[&"import", &empty]);
    assert_eq!(nothing.code, 2);
    assert!(nothing.stderr.contains("no session.json in it"), "{}", nothing.stderr);
}
