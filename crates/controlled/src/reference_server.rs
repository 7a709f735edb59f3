//! `tools/fixture/reference_logits.py --serve` for the reference tests: one Python process per
//! test thread, kept for the whole test run, instead of one per call. A call to a tiny model
//! costs about 1.2 s as a process of its own, nearly all of it the interpreter's start and
//! mlx_lm's import; served, it costs its work alone.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

/// What one call of `reference_logits.py ARGS` gave: its exit status and what it printed.
#[derive(Debug, serde::Deserialize)]
pub struct Outcome {
    pub status: i32,
    pub output: String,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.status == 0
    }
}

struct Server {
    _child: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
}

/// Servers between calls. A call takes one (or starts one) and gives it back when it answered,
/// so two threads never share one and a server that failed mid-call is never reused. Each ends
/// when the test process does (its input closes).
static IDLE: Mutex<Vec<Server>> = Mutex::new(Vec::new());

/// Runs `reference_logits.py ARGS` (as `.venv/bin/python`, from `repo`) in a served process.
pub fn call(repo: &Path, args: &[&str]) -> Outcome {
    let idle = IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop();
    let mut server = idle.unwrap_or_else(|| start(repo));
    let request = serde_json::to_string(args).expect("arguments as JSON");
    writeln!(server.requests, "{request}")
        .and_then(|()| server.requests.flush())
        .expect("write to reference_logits.py --serve");
    let mut answer = String::new();
    let read = server.answers.read_line(&mut answer).expect("read from reference_logits.py --serve");
    assert!(read > 0, "reference_logits.py --serve ended during the call {args:?} (its stderr is above)");
    let outcome = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("reference_logits.py --serve answered {answer:?}: {e}"));
    IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(server);
    outcome
}

fn start(repo: &Path) -> Server {
    let mut child = Command::new(repo.join(".venv/bin/python"))
        .args(["tools/fixture/reference_logits.py", "--serve"])
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start .venv/bin/python tools/fixture/reference_logits.py --serve");
    let requests = child.stdin.take().unwrap();
    let answers = BufReader::new(child.stdout.take().unwrap());
    Server { _child: child, requests, answers }
}
