//! The report page in a real browser: Chromium, headless, opens a session's `index.html` at a
//! phone's and a desktop's size, measures where the answer card, its verdicts and the figures
//! land, collects console errors, and writes a screenshot of the first three screens beside the
//! page. [`Rendering::problems`] says, one sentence each, what a person would find wrong; the
//! test command asserts there are none, on the page of a real session.
//!
//! The browser is found, never downloaded: `DECODE_BASELINE_CHROMIUM`, else `chromium` (Debian's
//! package, which `./verify.sh` installs where it is missing) or Chrome on `PATH`.

mod devtools;

use std::{
    cell::RefCell,
    path::{Path, PathBuf},
};

use anyhow::{anyhow, bail, Context as _};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::devtools::DevTools;

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
    // Dropped first: the browser ends before its profile is removed.
    devtools: RefCell<DevTools>,
    _profile: tempfile::TempDir,
}

/// The switches the browser starts with: headless, no network of its own (no background
/// connections, no component updates, no reports), no first-run pages, no GPU.
const SWITCHES: [&str; 16] = [
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--metrics-recording-only",
    "--password-store=basic",
    "--hide-scrollbars",
    // The test runs as root on CI machines, where Chromium's sandbox cannot start.
    "--no-sandbox",
];

impl Browser {
    /// Starts the browser found by [`chromium_path`], headless, with no network of its own and a
    /// new profile, driven over a pipe ([`devtools`]).
    pub fn launch() -> anyhow::Result<Self> {
        let path = chromium_path()?;
        let profile = tempfile::Builder::new().prefix("decode-baseline-chromium.").tempdir()?;
        let mut args: Vec<String> = SWITCHES.iter().map(|s| (*s).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        args.push("about:blank".to_owned());
        let devtools = DevTools::launch(&path, &args, &profile.path().join("browser.log"))?;
        Ok(Browser { devtools: RefCell::new(devtools), _profile: profile })
    }

    /// The browser's name and version (`Chrome/148.0.7778.167`: headless Chromium says Chrome).
    pub fn version(&self) -> anyhow::Result<String> {
        let version = self.devtools.borrow_mut().call(None, "Browser.getVersion", json!({}))?;
        Ok(version["product"].as_str().unwrap_or_default().to_owned())
    }

    /// Opens `page` at `viewport`, measures it and writes a PNG of its first three screens to
    /// `screenshot`.
    pub fn render(&self, page: &Path, viewport: Viewport, screenshot: &Path) -> anyhow::Result<Rendering> {
        let page = page.canonicalize().with_context(|| format!("no page at {}", page.display()))?;
        let devtools = &mut *self.devtools.borrow_mut();
        let target = devtools.call(None, "Target.createTarget", json!({ "url": "about:blank" }))?;
        let target = target["targetId"].as_str().context("Target.createTarget returned no targetId")?.to_owned();
        let attached = devtools.call(None, "Target.attachToTarget", json!({ "targetId": target, "flatten": true }))?;
        let session = attached["sessionId"].as_str().context("Target.attachToTarget returned no sessionId")?;
        let tab = Some(session);
        for domain in ["Page", "Runtime", "Log"] {
            devtools.call(tab, &format!("{domain}.enable"), json!({}))?;
        }
        // The load of the page asked for, told from any other by its loader.
        devtools.call(tab, "Page.setLifecycleEventsEnabled", json!({ "enabled": true }))?;
        devtools.call(
            tab,
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": viewport.width, "height": viewport.height, "deviceScaleFactor": 1, "mobile": viewport.mobile }),
        )?;
        let url = format!("file://{}", page.display());
        let navigated = devtools.call(tab, "Page.navigate", json!({ "url": url }))?;
        if let Some(error) = navigated["errorText"].as_str() {
            bail!("the browser could not open {url}: {error}");
        }
        let loader = navigated["loaderId"].as_str().context("Page.navigate returned no loaderId")?.to_owned();
        devtools.wait_for_event(session, "Page.lifecycleEvent", |e| e["name"] == "load" && e["loaderId"] == loader)?;
        let measured = devtools.call(
            tab,
            "Runtime.evaluate",
            json!({ "expression": MEASURE, "returnByValue": true, "awaitPromise": false }),
        )?;
        let json = measured["result"]["value"]
            .as_str()
            .ok_or_else(|| anyhow!("the page's measurement returned no JSON: {}", measured["exceptionDetails"]))?;
        let layout: Layout = serde_json::from_str(json).with_context(|| format!("the page's measurement: {json}"))?;
        let height = layout.document_height.min(FIRST_FIGURE_SCREENS * f64::from(viewport.height));
        let png = devtools.call(
            tab,
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "clip": { "x": 0, "y": 0, "width": viewport.width, "height": height, "scale": 1 },
                "fromSurface": true,
                "captureBeyondViewport": true,
            }),
        )?;
        let data = png["data"].as_str().context("Page.captureScreenshot returned no data")?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(data).context("the screenshot's base64")?;
        std::fs::write(screenshot, bytes).with_context(|| format!("failed to write {}", screenshot.display()))?;
        let console_errors =
            devtools.take_events(session).iter().filter_map(|(method, params)| console_error(method, params)).collect();
        devtools.call(None, "Target.closeTarget", json!({ "targetId": target }))?;
        Ok(Rendering { viewport, layout, console_errors, screenshot: screenshot.to_owned() })
    }
}

/// The words of an event that reports an error on the page: an error logged by the browser, an
/// uncaught exception, or `console.error`.
fn console_error(method: &str, params: &Value) -> Option<String> {
    match method {
        "Log.entryAdded" if params["entry"]["level"] == "error" => params["entry"]["text"].as_str().map(str::to_owned),
        "Runtime.exceptionThrown" => {
            let details = &params["exceptionDetails"];
            let text = details["text"].as_str().unwrap_or("exception");
            // The description is the error and its stack, a line a frame: one line here.
            Some(match details["exception"]["description"].as_str() {
                Some(description) => format!("{text} {}", description.split_whitespace().collect::<Vec<_>>().join(" ")),
                None => text.to_owned(),
            })
        }
        "Runtime.consoleAPICalled" if params["type"] == "error" => {
            let args: Vec<String> = params["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| a["value"].as_str().map_or_else(|| a["value"].to_string(), str::to_owned))
                .collect();
            Some(args.join(" "))
        }
        _ => None,
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
    fn errors_logged_thrown_or_printed_to_the_console_are_collected_and_nothing_else() {
        let logged = json!({ "entry": { "level": "error", "text": "Failed to load resource" } });
        assert_eq!(console_error("Log.entryAdded", &logged).as_deref(), Some("Failed to load resource"));
        let warning = json!({ "entry": { "level": "warning", "text": "deprecated" } });
        assert_eq!(console_error("Log.entryAdded", &warning), None);
        let thrown = json!({ "exceptionDetails": { "text": "Uncaught", "exception": { "description": "ReferenceError: x is not defined\n    at file:///p/index.html:9:41" } } });
        assert_eq!(
            console_error("Runtime.exceptionThrown", &thrown).as_deref(),
            Some("Uncaught ReferenceError: x is not defined at file:///p/index.html:9:41")
        );
        let printed = json!({ "type": "error", "args": [{ "value": "bad row" }, { "value": 3 }] });
        assert_eq!(console_error("Runtime.consoleAPICalled", &printed).as_deref(), Some("bad row 3"));
        let info = json!({ "type": "log", "args": [{ "value": "hello" }] });
        assert_eq!(console_error("Runtime.consoleAPICalled", &info), None);
        assert_eq!(console_error("Page.loadEventFired", &json!({})), None);
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
