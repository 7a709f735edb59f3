//! The report page in a real browser: Chromium, headless, opens a session's `index.html` at a
//! phone's and a desktop's size, measures where the answer card, its verdicts and the figures
//! land, collects console errors, and writes a screenshot of the first three screens beside the
//! page. [`Rendering::problems`] says, one sentence each, what a person would find wrong; the
//! test command asserts there are none, on the page of a real session.
//!
//! The browser is found, never downloaded: `DECODE_BASELINE_CHROMIUM`, else `chromium` (Debian's
//! package, which `./verify.sh` installs where it is missing) or Chrome on `PATH`.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{anyhow, bail, Context as _};
use base64::Engine as _;
use headless_chrome::{
    protocol::cdp::{Emulation, Page, Runtime},
    Browser as Chrome, LaunchOptions,
};
use serde::Deserialize;

/// The environment variable naming the browser to use.
pub const CHROMIUM_ENV: &str = "DECODE_BASELINE_CHROMIUM";

/// A browser window's size in CSS pixels, and whether it is a phone's (touch, mobile layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    pub name: &'static str,
    pub width: u32,
    pub height: u32,
    pub mobile: bool,
}

/// A phone held upright (the size of a current mid-range phone).
pub const PHONE: Viewport = Viewport { name: "phone", width: 390, height: 844, mobile: true };
/// A laptop's browser window.
pub const DESKTOP: Viewport = Viewport { name: "desktop", width: 1280, height: 800, mobile: false };
/// The sizes the page is checked at.
pub const VIEWPORTS: [Viewport; 2] = [PHONE, DESKTOP];

/// How many screens down the first figure may start.
pub const FIRST_FIGURE_SCREENS: f64 = 3.0;

/// Where the page's parts landed, in CSS pixels from the top of the document.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Layout {
    /// The window as the page sees it (`innerWidth`, `innerHeight`): the size asked for, unless
    /// a phone zoomed out to fit a page wider than itself.
    pub viewport_width: f64,
    pub viewport_height: f64,
    /// The document's scroll width: wider than the viewport means the page scrolls sideways.
    pub document_width: f64,
    pub document_height: f64,
    /// The answer card (`#answer`): its top and bottom, when the page has one.
    pub answer: Option<Span>,
    /// The verdicts in the answer card (`[data-verdict]`), in page order.
    pub verdicts: Vec<Verdict>,
    /// Every figure's drawing (`figure[data-figure] svg`), in page order.
    pub figures: Vec<Drawn>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
pub struct Span {
    pub top: f64,
    pub bottom: f64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Verdict {
    pub word: String,
    pub bottom: f64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Drawn {
    pub name: String,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

/// One page rendered at one viewport.
#[derive(Debug, Clone)]
pub struct Rendering {
    pub viewport: Viewport,
    pub layout: Layout,
    /// Console errors, uncaught exceptions and error log entries, as the browser worded them.
    pub console_errors: Vec<String>,
    pub screenshot: PathBuf,
}

impl Rendering {
    /// What a person would find wrong, one sentence each; empty when the page reads well: it is
    /// no wider than the viewport, the answer card with every verdict lies in the first screen,
    /// the first figure starts within the first [`FIRST_FIGURE_SCREENS`] screens, every figure
    /// is drawn at a nonzero size, and the console is clean.
    pub fn problems(&self) -> Vec<String> {
        let l = &self.layout;
        // The screen the person has: a phone lays a page wider than itself out at that width and
        // zooms out, so the window's own measure of itself would hide the sideways scroll.
        let (width, height) = (f64::from(self.viewport.width), f64::from(self.viewport.height));
        let mut out = Vec::new();
        if l.document_width > width + 0.5 {
            out.push(format!(
                "the document is {:.0} px wide in a {width:.0} px viewport: the page scrolls sideways or is shown zoomed out",
                l.document_width
            ));
        }
        match l.answer {
            None => out.push("the page has no answer card (#answer)".to_owned()),
            Some(answer) if answer.top >= height => out.push(format!(
                "the answer card starts {:.0} px down, below the first screen ({:.0} px)",
                answer.top, height
            )),
            Some(_) => {}
        }
        if l.answer.is_some() && l.verdicts.is_empty() {
            out.push("the answer card shows no verdict ([data-verdict])".to_owned());
        }
        if let Some(last) = l.verdicts.iter().max_by(|a, b| a.bottom.total_cmp(&b.bottom)) {
            if last.bottom > height {
                out.push(format!(
                    "a verdict ('{}') ends {:.0} px down, below the first screen ({:.0} px)",
                    last.word, last.bottom, height
                ));
            }
        }
        match l.figures.first() {
            None => out.push("the page shows no figure".to_owned()),
            Some(first) if first.top > FIRST_FIGURE_SCREENS * height => out.push(format!(
                "the first figure starts {:.0} px down, beyond the first {FIRST_FIGURE_SCREENS} screens ({:.0} px)",
                first.top,
                FIRST_FIGURE_SCREENS * height
            )),
            Some(_) => {}
        }
        for f in l.figures.iter().filter(|f| f.width < 1.0 || f.height < 1.0) {
            out.push(format!("the figure {} is drawn {:.0} × {:.0} px", f.name, f.width, f.height));
        }
        out.extend(self.console_errors.iter().map(|e| format!("console error: {e}")));
        out
    }

    /// One line on what was measured, for a person.
    pub fn summary(&self) -> String {
        let l = &self.layout;
        let answer =
            l.answer.map_or("no answer card".to_owned(), |a| format!("answer card {:.0}–{:.0} px", a.top, a.bottom));
        let first = l.figures.first().map_or("no figure".to_owned(), |f| format!("first figure at {:.0} px", f.top));
        format!(
            "{} {}×{}: document {:.0} px wide, {:.0} px tall ({:.1} screens); {answer}, {} verdicts; {first}, {} figures; {} console errors; {}",
            self.viewport.name,
            self.viewport.width,
            self.viewport.height,
            l.document_width,
            l.document_height,
            l.document_height / f64::from(self.viewport.height),
            l.verdicts.len(),
            l.figures.len(),
            self.console_errors.len(),
            self.screenshot.display()
        )
    }
}

/// The measurement, run in the page once it has loaded; returns [`Layout`] as JSON.
const MEASURE: &str = r#"(() => {
  const box = e => { const b = e.getBoundingClientRect(); return { top: b.top + scrollY, bottom: b.bottom + scrollY, width: b.width, height: b.height }; };
  const answer = document.getElementById('answer');
  const verdicts = answer ? [...answer.querySelectorAll('[data-verdict]')].map(v => ({ word: v.dataset.verdict, bottom: box(v).bottom })) : [];
  const figures = [...document.querySelectorAll('figure[data-figure]')].map(f => {
    const b = box(f.querySelector('svg') || f);
    return { name: f.dataset.figure, top: b.top, width: b.width, height: b.height };
  });
  const root = document.documentElement;
  return JSON.stringify({
    viewport_width: innerWidth, viewport_height: innerHeight,
    document_width: Math.max(root.scrollWidth, document.body.scrollWidth),
    document_height: Math.max(root.scrollHeight, document.body.scrollHeight),
    answer: answer ? (({ top, bottom }) => ({ top, bottom }))(box(answer)) : null,
    verdicts, figures });
})()"#;

/// The browser executable: `DECODE_BASELINE_CHROMIUM`, else the first of Chromium's and Chrome's
/// usual names on `PATH`.
pub fn chromium_path() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(CHROMIUM_ENV) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{CHROMIUM_ENV}={} is not a file: name a Chromium or Chrome executable", path.display());
        }
        return Ok(path);
    }
    let dirs: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .iter()
        .flat_map(|name| dirs.iter().map(move |d| d.join(name)))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow!(
                "no Chromium found on PATH: install Debian's `chromium` (`apt-get install chromium`; ./verify.sh does \
                 this where it can) or set {CHROMIUM_ENV} to a Chromium or Chrome executable"
            )
        })
}

/// A headless Chromium with a profile of its own, for as long as it lives.
pub struct Browser {
    chrome: Chrome,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts the browser found by [`chromium_path`], headless, with no network of its own
    /// (no background connections, no component or safe-browsing updates) and a new profile.
    pub fn launch() -> anyhow::Result<Self> {
        let path = chromium_path()?;
        let profile = tempfile::Builder::new().prefix("decode-baseline-chromium.").tempdir()?;
        let args: Vec<&OsStr> = [
            "--disable-gpu",
            "--disable-quic",
            "--disable-component-update",
            "--disable-domain-reliability",
            "--hide-scrollbars",
        ]
        .iter()
        .map(OsStr::new)
        .collect();
        let options = LaunchOptions {
            headless: true,
            // The test runs as root on CI machines, where Chromium's sandbox cannot start.
            sandbox: false,
            path: Some(path.clone()),
            user_data_dir: Some(profile.path().to_owned()),
            args,
            idle_browser_timeout: Duration::from_secs(120),
            ..LaunchOptions::default()
        };
        let chrome = Chrome::new(options).with_context(|| format!("failed to start {}", path.display()))?;
        Ok(Browser { chrome, _profile: profile })
    }

    /// The browser's name and version (`Chrome/148.0.7778.167`: headless Chromium says Chrome).
    pub fn version(&self) -> anyhow::Result<String> {
        Ok(self.chrome.get_version()?.product)
    }

    /// Opens `page` at `viewport`, measures it and writes a PNG of its first three screens to
    /// `screenshot`.
    pub fn render(&self, page: &Path, viewport: Viewport, screenshot: &Path) -> anyhow::Result<Rendering> {
        let page = page.canonicalize().with_context(|| format!("no page at {}", page.display()))?;
        let tab = self.chrome.new_tab()?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        tab.enable_log()?;
        tab.enable_runtime()?;
        tab.add_event_listener(Arc::new(move |event: &headless_chrome::protocol::cdp::types::Event| {
            use headless_chrome::protocol::cdp::{types::Event, Log::LogEntryLevel};
            let message = match event {
                Event::LogEntryAdded(e) if e.params.entry.level == LogEntryLevel::Error => {
                    Some(e.params.entry.text.clone())
                }
                Event::RuntimeExceptionThrown(e) => Some(e.params.exception_details.text.clone()),
                Event::RuntimeConsoleAPICalled(e)
                    if e.params.Type == Runtime::ConsoleAPICalledEventTypeOption::Error =>
                {
                    Some(format!("{:?}", e.params.args.iter().map(|a| a.value.clone()).collect::<Vec<_>>()))
                }
                _ => None,
            };
            if let Some(message) = message {
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(message);
            }
        }))?;
        tab.call_method(Emulation::SetDeviceMetricsOverride {
            width: viewport.width,
            height: viewport.height,
            device_scale_factor: 1.0,
            mobile: viewport.mobile,
            scale: None,
            screen_width: None,
            screen_height: None,
            position_x: None,
            position_y: None,
            dont_set_visible_size: None,
            screen_orientation: None,
            viewport: None,
            display_feature: None,
            device_posture: None,
        })?;
        let url = format!("file://{}", page.display());
        tab.navigate_to(&url)?.wait_until_navigated()?;
        let measured = tab.evaluate(MEASURE, false)?;
        let json = measured.value.and_then(|v| v.as_str().map(str::to_owned)).ok_or_else(|| {
            anyhow!("the page's measurement returned no JSON: {}", measured.description.unwrap_or_default())
        })?;
        let layout: Layout = serde_json::from_str(&json).with_context(|| format!("the page's measurement: {json}"))?;
        let height = layout.document_height.min(FIRST_FIGURE_SCREENS * f64::from(viewport.height));
        let png = tab.call_method(Page::CaptureScreenshot {
            format: Some(Page::CaptureScreenshotFormatOption::Png),
            quality: None,
            clip: Some(Page::Viewport { x: 0.0, y: 0.0, width: f64::from(viewport.width), height, scale: 1.0 }),
            from_surface: Some(true),
            capture_beyond_viewport: Some(true),
            optimize_for_speed: None,
        })?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(&png.data).context("the screenshot's base64")?;
        std::fs::write(screenshot, bytes).with_context(|| format!("failed to write {}", screenshot.display()))?;
        tab.close(false)?;
        let console_errors = errors.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(Rendering { viewport, layout, console_errors, screenshot: screenshot.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendering(layout: Layout) -> Rendering {
        Rendering { viewport: PHONE, layout, console_errors: Vec::new(), screenshot: PathBuf::from("page-phone.png") }
    }

    fn good() -> Layout {
        Layout {
            viewport_width: 390.0,
            viewport_height: 844.0,
            document_width: 390.0,
            document_height: 4000.0,
            answer: Some(Span { top: 150.0, bottom: 800.0 }),
            verdicts: vec![Verdict { word: "faster".into(), bottom: 790.0 }],
            figures: vec![Drawn { name: "a.steps".into(), top: 900.0, width: 360.0, height: 200.0 }],
        }
    }

    #[test]
    fn a_page_that_reads_well_has_no_problem_and_each_defect_is_named() {
        assert_eq!(rendering(good()).problems(), Vec::<String>::new());
        let one = |edit: fn(&mut Layout)| {
            let mut layout = good();
            edit(&mut layout);
            let problems = rendering(layout).problems();
            assert_eq!(problems.len(), 1, "{problems:#?}");
            problems[0].clone()
        };
        // A phone that zoomed out to fit a wide page reports its own width as the page's.
        assert!(one(|l| (l.document_width, l.viewport_width) = (1213.0, 1213.0)).contains("1213 px wide in a 390 px"));
        assert!(one(|l| l.answer = None).contains("no answer card"));
        assert!(one(|l| l.answer = Some(Span { top: 900.0, bottom: 1000.0 })).contains("starts 900 px down"));
        assert!(one(|l| l.verdicts.clear()).contains("no verdict"));
        assert!(one(|l| l.verdicts[0].bottom = 845.0).contains("('faster') ends 845 px down"));
        assert!(one(|l| l.figures.clear()).contains("no figure"));
        assert!(one(|l| l.figures[0].top = 2533.0).contains("beyond the first 3 screens (2532 px)"));
        assert!(one(|l| l.figures[0].height = 0.0).contains("a.steps is drawn 360 × 0 px"));
        let mut noisy = rendering(good());
        noisy.console_errors.push("Uncaught ReferenceError".into());
        assert_eq!(noisy.problems(), vec!["console error: Uncaught ReferenceError".to_owned()]);
    }

    #[test]
    fn a_browser_named_in_the_environment_must_exist() {
        // The variable is read by this test alone in this crate's tests.
        std::env::set_var(CHROMIUM_ENV, "/nonexistent/chromium");
        let err = chromium_path().unwrap_err().to_string();
        std::env::remove_var(CHROMIUM_ENV);
        assert!(err.contains("DECODE_BASELINE_CHROMIUM=/nonexistent/chromium is not a file"), "{err}");
    }
}
