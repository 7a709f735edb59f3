//! The report page of a real session in a real browser: Chromium, headless, driven over the
//! DevTools protocol (`decode-baseline-page-check`), at a phone's size (390 × 844) and a
//! desktop's (1280 × 800). The document is no wider than the window, the answer card with every
//! verdict lies in the first screen, the first figure within the first three, every figure is
//! drawn at a nonzero size, and the console is clean. The screenshots stay beside the session,
//! in `target/page-check/`, for a person to look at. The same check fails on the same page made
//! wider than the phone on purpose, and on one whose answer card comes after the figures. With no
//! browser the test fails, never skips (`./verify.sh` installs Debian's `chromium`).

use std::path::{Path, PathBuf};

use decode_baseline_page_check::{Browser, Rendering, Viewport, PHONE, VIEWPORTS};
use serde_json::json;

use crate::util::{launcher_in, only_session, read_json, repo_root, run};

/// A session of the main job's shape, smaller: one case, its L16 prompt in every mode, both
/// adapters, two interleaved runs.
fn run_session(root: &Path) -> PathBuf {
    let cells: Vec<String> = ["headline", "fixed_continuation", "reference_pair"]
        .iter()
        .map(|mode| format!("tiny-qwen3.tiny-qwen3-L16.{mode}"))
        .collect();
    let job = json!({
        "schema_version": 1, "manifest": repo_root().join("workloads.json"), "cells": cells,
        "adapters": ["controlled", "stock"], "output_root": root.join("out"),
        "repetitions": 2, "order": "interleaved"
    });
    std::fs::write(root.join("job.json"), job.to_string()).unwrap();
    let out = run(&mut launcher_in(root));
    let stderr = std::fs::read_to_string(root.join("launcher.stderr")).unwrap_or_default();
    assert!(out.status.success(), "the session failed ({:?}): {stderr}", out.status);
    only_session(&root.join("out"))
}

fn render(browser: &Browser, page: &Path, viewport: Viewport, screenshot: &Path) -> Rendering {
    browser
        .render(page, viewport, screenshot)
        .unwrap_or_else(|e| panic!("{} at {}: {e:#}", page.display(), viewport.name))
}

/// Whether `path` holds a PNG image (its signature), not merely a file.
fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.len() > 1000 && b.starts_with(b"\x89PNG\r\n\x1a\n"))
}

#[test]
fn the_page_of_a_real_session_reads_well_in_chromium_at_phone_and_desktop_sizes() {
    let root = repo_root().join("target/page-check");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let dir = run_session(&root);
    let page = dir.join("index.html");
    let session = read_json(&dir.join("session.json"));
    // Every judged row (headline, its time to first token and fixed-continuation: the reference
    // pair is not timed against the reference) has its verdict on the card.
    let judged = session["decisions"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["cell"].as_str().unwrap().ends_with(".reference_pair") && !r["adapter"].is_null())
        .count();
    assert_eq!(judged, 3, "{:#}", session["decisions"]["rows"]);

    let browser = Browser::launch().unwrap_or_else(|e| panic!("no browser for the page's test (never skipped): {e:#}"));
    eprintln!("browser: {}", browser.version().unwrap());
    for viewport in VIEWPORTS {
        let shot = dir.join(format!("page-{}.png", viewport.name));
        let rendering = render(&browser, &page, viewport, &shot);
        eprintln!("{}", rendering.summary());
        assert_eq!(rendering.problems(), Vec::<String>::new(), "{}", rendering.summary());
        assert_eq!(rendering.layout.viewport_width, f64::from(viewport.width), "the window is the size asked for");
        assert_eq!(rendering.layout.verdicts.len(), judged, "{:?}", rendering.layout.verdicts);
        let figures = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg"))
            .count();
        assert!(figures > 0);
        assert_eq!(rendering.layout.figures.len(), figures, "every figure of the folder is drawn on the page");
        assert!(is_png(&shot), "{} is not a screenshot", shot.display());
    }

    // The same check, on the same page broken on purpose, in a folder of its own.
    let broken = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    let shot = broken.path().join("page.png");
    let wide = broken.path().join("wide.html");
    std::fs::write(
        &wide,
        html.replacen("<body>", "<body>\n<div style=\"width:1200px\">a line wider than a phone</div>", 1),
    )
    .unwrap();
    let problems = render(&browser, &wide, PHONE, &shot).problems();
    assert!(problems.iter().any(|p| p.contains("wide in a 390 px viewport")), "{problems:#?}");

    let (start, end) = (html.find("<section id=\"answer\">").unwrap(), html.find("<section id=\"figures\">").unwrap());
    let figures_end = end + html[end..].find("</section>").unwrap() + "</section>\n".len();
    let late = broken.path().join("late.html");
    let reordered =
        format!("{}{}{}{}", &html[..start], &html[end..figures_end], &html[start..end], &html[figures_end..]);
    std::fs::write(&late, reordered).unwrap();
    let problems = render(&browser, &late, PHONE, &shot).problems();
    assert!(problems.iter().any(|p| p.contains("below the first screen")), "{problems:#?}");
}
