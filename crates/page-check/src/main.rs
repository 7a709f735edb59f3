//! `decode-baseline-page-check PAGE...`: opens each report page (an `index.html`, or a session
//! folder holding one) in headless Chromium at a phone's and a desktop's size, prints what it
//! measured, writes `page-phone.png` and `page-desktop.png` beside the page, and lists what a
//! person would find wrong. Exit 0: nothing wrong; 1: something wrong; 2: a page or the browser
//! could not be opened.

use std::path::PathBuf;

use decode_baseline_page_check::{Browser, VIEWPORTS};

fn main() -> std::process::ExitCode {
    let pages: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if pages.is_empty() {
        eprintln!("usage: decode-baseline-page-check PAGE_OR_SESSION_FOLDER...");
        return std::process::ExitCode::from(2);
    }
    match check(&pages) {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Checks every page at every viewport; whether all read well.
fn check(pages: &[PathBuf]) -> anyhow::Result<bool> {
    let browser = Browser::launch()?;
    println!("browser: {}", browser.version()?);
    let mut clean = true;
    for page in pages {
        let page = if page.is_dir() { page.join("index.html") } else { page.clone() };
        let dir = page.parent().map(PathBuf::from).unwrap_or_default();
        println!("{}", page.display());
        for viewport in VIEWPORTS {
            let rendering = browser.render(&page, viewport, &dir.join(format!("page-{}.png", viewport.name)))?;
            println!("  {}", rendering.summary());
            for problem in rendering.problems() {
                clean = false;
                println!("    problem: {problem}");
            }
        }
    }
    Ok(clean)
}
