//! Chromium's DevTools protocol over a pipe (`--remote-debugging-pipe`): the browser reads
//! commands on its file descriptor 3 and writes responses and events on 4, one JSON message each,
//! ended by a NUL byte. No port is opened and no HTTP or WebSocket is spoken, so the client is a
//! reader thread and a counter; the page's check sends about a dozen commands a page.
//!
//! Commands to a tab go through a flat session (`Target.attachToTarget` with `flatten`): the
//! message carries the session's id. Events that arrive while a command waits for its answer are
//! kept, in order, for [`DevTools::wait_for_event`] and [`DevTools::take_events`].

use std::{
    fs::File,
    io::{BufRead as _, BufReader, PipeWriter, Write as _},
    os::{fd::AsRawFd as _, unix::process::CommandExt as _},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc::{self, Receiver, RecvTimeoutError},
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};

/// How long one answer or event may take before the browser is given up on.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running browser and its end of the protocol's pipe.
pub struct DevTools {
    child: Child,
    to_browser: PipeWriter,
    from_browser: Receiver<Value>,
    /// Events received while waiting for something else, oldest first.
    pending: Vec<Value>,
    next_id: u64,
    /// The browser's standard error, for the message when it stops answering.
    log: std::path::PathBuf,
}

impl DevTools {
    /// Starts `program` with `args` and the pipe on its descriptors 3 and 4; its standard error
    /// goes to `log`.
    pub fn launch(program: &Path, args: &[String], log: &Path) -> anyhow::Result<Self> {
        let (browser_reads, to_browser) = std::io::pipe()?;
        let (from_browser, browser_writes) = std::io::pipe()?;
        let (reads, writes) = (browser_reads.as_raw_fd(), browser_writes.as_raw_fd());
        let mut command = Command::new(program);
        command
            .args(args)
            .arg("--remote-debugging-pipe")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(log).with_context(|| format!("failed to create {}", log.display()))?);
        // SAFETY: between fork and exec the closure calls only fcntl and dup2, which are
        // async-signal-safe, and allocates nothing. Both ends are first copied above 4 (copies
        // without close-on-exec), so that placing one on 3 cannot close the other.
        unsafe {
            command.pre_exec(move || {
                let high = [libc::fcntl(reads, libc::F_DUPFD, 5), libc::fcntl(writes, libc::F_DUPFD, 5)];
                if high.contains(&-1) || libc::dup2(high[0], 3) < 0 || libc::dup2(high[1], 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().with_context(|| format!("failed to start {}", program.display()))?;
        // The browser holds its own copies now; with ours closed, its exit ends the reader.
        drop((browser_reads, browser_writes));
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from_browser);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                // A message that is not JSON, or no one left to read: the reader stops.
                let Ok(value) = serde_json::from_slice::<Value>(&message) else { return };
                if sender.send(value).is_err() {
                    return;
                }
                message.clear();
            }
        });
        Ok(DevTools { child, to_browser, from_browser: receiver, pending: Vec::new(), next_id: 0, log: log.to_owned() })
    }

    /// Sends `method` with `params` (to the tab of `session`, or to the browser) and returns the
    /// answer's `result`; an `error` answer is an error naming the method.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.send(session, method, params).map_err(|e| self.stopped(&format!("sending {method}: {e}")))?;
        let answer = self.next_matching(method, |m| m["id"].as_u64() == Some(id))?;
        if let Some(error) = answer.get("error") {
            bail!("the browser refused {method}: {}", error["message"].as_str().unwrap_or("no message"));
        }
        Ok(answer["result"].clone())
    }

    /// Waits for the event `method` of `session` whose `params` `accept` (one already received
    /// counts) and returns them; the events before it stay kept.
    pub fn wait_for_event(
        &mut self,
        session: &str,
        method: &str,
        accept: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        let matches = |m: &Value| m["method"] == method && m["sessionId"] == session && accept(&m["params"]);
        if let Some(at) = self.pending.iter().position(matches) {
            return Ok(self.pending.remove(at)["params"].clone());
        }
        Ok(self.next_matching(method, matches)?["params"].clone())
    }

    /// The events of `session` received so far, oldest first, as `(method, params)`; they are
    /// not kept after.
    pub fn take_events(&mut self, session: &str) -> Vec<(String, Value)> {
        let (taken, kept) = std::mem::take(&mut self.pending).into_iter().partition(|m| m["sessionId"] == session);
        self.pending = kept;
        taken
            .into_iter()
            .map(|m: Value| (m["method"].as_str().unwrap_or_default().to_owned(), m["params"].clone()))
            .collect()
    }

    /// Writes one command; its id.
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> std::io::Result<u64> {
        self.next_id += 1;
        let mut message = json!({ "id": self.next_id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        self.to_browser.write_all(&bytes)?;
        Ok(self.next_id)
    }

    /// The next message that `matches`, within [`PATIENCE`]; the events received before it are
    /// kept, any other answer (to a command no one waits for) is dropped.
    fn next_matching(&mut self, waiting_for: &str, matches: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.from_browser.recv_timeout(left).map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    self.stopped(&format!("no answer to {waiting_for} within {} s", PATIENCE.as_secs()))
                }
                RecvTimeoutError::Disconnected => {
                    self.stopped(&format!("the pipe closed while waiting for {waiting_for}"))
                }
            })?;
            if matches(&message) {
                return Ok(message);
            }
            if message.get("method").is_some() {
                self.pending.push(message);
            }
        }
    }

    /// An error for a browser that stopped answering, with the end of what it wrote.
    fn stopped(&mut self, what: &str) -> anyhow::Error {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!("it exited ({status})"),
            _ => "it is still running".to_owned(),
        };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        anyhow!(
            "the browser stopped answering: {what}; {status}; the end of its log ({}):\n{}",
            self.log.display(),
            tail.join("\n")
        )
    }
}

impl Drop for DevTools {
    fn drop(&mut self) {
        // Asked first, so that it closes its own files; ended after 5 s.
        let _ = self.send(None, "Browser.close", json!({}));
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(5) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the browser, in Python: it reads commands on descriptor 3 and answers on 4;
    /// before each answer it sends an event of the command's session, refuses `Fail.now`, and
    /// exits at `Browser.close`, or without a word at `Exit.now`.
    const FAKE: &str = r#"
import json, os, sys
commands, answers = os.fdopen(3, "rb"), os.fdopen(4, "wb")
def send(message):
    answers.write(json.dumps(message).encode() + b"\0"); answers.flush()
buffer = b""
while True:
    chunk = commands.read1(65536)
    if not chunk:
        sys.exit(0)
    buffer += chunk
    while b"\0" in buffer:
        raw, buffer = buffer.split(b"\0", 1)
        m = json.loads(raw)
        if m["method"] == "Exit.now":
            os._exit(3)
        if m["method"] == "Browser.close":
            sys.exit(0)
        send({"method": "Seen.command", "sessionId": m.get("sessionId"), "params": {"id": m["id"]}})
        if m["method"] == "Fail.now":
            send({"id": m["id"], "error": {"code": -32000, "message": "no such thing"}})
        else:
            send({"id": m["id"], "result": {"method": m["method"], "params": m["params"]}})
"#;

    fn fake() -> (DevTools, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fake.py");
        std::fs::write(&script, FAKE).unwrap();
        let tools =
            DevTools::launch(Path::new("python3"), &[script.display().to_string()], &dir.path().join("log")).unwrap();
        (tools, dir)
    }

    #[test]
    fn answers_are_matched_by_id_and_events_kept_by_session() {
        let (mut tools, _dir) = fake();
        let answer = tools.call(Some("tab-1"), "Page.navigate", json!({ "url": "file:///x" })).unwrap();
        assert_eq!(answer, json!({ "method": "Page.navigate", "params": { "url": "file:///x" } }));
        tools.call(None, "Browser.getVersion", json!({})).unwrap();
        tools.call(Some("tab-1"), "Page.enable", json!({})).unwrap();
        // The event asked for is found among those kept; the rest of tab-1's stay in order.
        assert_eq!(tools.wait_for_event("tab-1", "Seen.command", |p| p["id"] == 1).unwrap(), json!({ "id": 1 }));
        let events = tools.take_events("tab-1");
        assert_eq!(events, vec![("Seen.command".to_owned(), json!({ "id": 3 }))]);
        assert!(tools.take_events("tab-1").is_empty());
        // The browser's own event (no session) was not taken with the tab's.
        assert_eq!(tools.pending.len(), 1);
    }

    #[test]
    fn a_refusal_names_the_method_and_a_browser_gone_says_so() {
        let (mut tools, _dir) = fake();
        let refused = tools.call(None, "Fail.now", json!({})).unwrap_err().to_string();
        assert_eq!(refused, "the browser refused Fail.now: no such thing");
        let gone = tools.call(None, "Exit.now", json!({})).unwrap_err().to_string();
        assert!(gone.contains("the browser stopped answering: the pipe closed while waiting for Exit.now"), "{gone}");
    }
}
