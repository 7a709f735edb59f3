//! CPU placement of the workers (`run --cpus LIST`): the CPUs every worker a session starts
//! may run on, applied in the child before `exec` and read back from the started worker.
//!
//! Why in the child and not on the launcher: the worker's threads (its main thread and MLX's
//! stream thread, or the Python interpreter's) inherit the mask at `exec`, while the launcher
//! (which polls its workers every 20 ms and samples the host) stays where the OS puts it, so a
//! placement can also keep the launcher off the workers' CPU (`taskset -c 1 decode-baseline run
//! --cpus 0`), which `req/findings.md` §18 measures. The mask is read back from each started
//! worker with `sched_getaffinity(pid)`: what it got, not what was asked (the kernel drops CPUs
//! outside the launcher's cpuset).
//!
//! The default is one CPU (`first`: the lowest-numbered CPU the launcher itself may use),
//! chosen by measurement on the 2-vCPU development host (`req/findings.md` §18): the per-pair
//! scatter of the within-session yardstick was far lower with the workers on one CPU than left
//! to the OS. A model whose evaluation is bound by multi-threaded kernels may want more CPUs;
//! the user says so with `--cpus`.
//!
//! macOS has no affinity call: there the request is recorded and placement is left to the OS.

use std::collections::BTreeSet;

use decode_baseline_wire::session::Placement;

/// `run --cpus`: which CPUs the workers may run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cpus {
    /// Every CPU the launcher may use: placement left to the OS's scheduler.
    All,
    /// The lowest-numbered CPU the launcher may use (the default).
    First,
    /// These CPUs (0-based ids as in `/proc/cpuinfo`).
    List(BTreeSet<usize>),
}

/// The expected form, for the flag's error.
const FORM: &str = "`all`, `first`, or CPU ids and ranges such as `0`, `0,1`, `0-3`, `0,2-3`";

/// Past any real machine's CPU count and below `CPU_SETSIZE` (1024 on Linux).
const MAX_CPU: usize = 1023;

impl Cpus {
    /// Parses `--cpus`; the error names the expected form (clap adds the flag's name and exits 2).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text {
            "all" => return Ok(Self::All),
            "first" => return Ok(Self::First),
            "" => return Err(format!("empty CPU list; expected {FORM}")),
            _ => {}
        }
        let id = |word: &str| -> Result<usize, String> {
            let id: usize = word.trim().parse().map_err(|_| format!("`{word}` is not a CPU id; expected {FORM}"))?;
            if id > MAX_CPU {
                return Err(format!("CPU {id} is past {MAX_CPU}; expected {FORM}"));
            }
            Ok(id)
        };
        let mut set = BTreeSet::new();
        for part in text.split(',') {
            match part.split_once('-') {
                Some((low, high)) => {
                    let (low, high) = (id(low)?, id(high)?);
                    if low > high {
                        return Err(format!("range `{part}` runs backwards; expected {FORM}"));
                    }
                    set.extend(low..=high);
                }
                None => {
                    set.insert(id(part)?);
                }
            }
        }
        Ok(Self::List(set))
    }

    /// As the user would write it: `all`, `first`, or a compact list (`0-3,6`).
    pub fn text(&self) -> String {
        match self {
            Self::All => "all".to_owned(),
            Self::First => "first".to_owned(),
            Self::List(set) => list_text(set),
        }
    }
}

impl std::fmt::Display for Cpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// A set of CPU ids as ranges: `{0, 1, 2, 5}` → `0-2,5`.
pub fn list_text(set: &BTreeSet<usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut ids = set.iter().copied().peekable();
    while let Some(start) = ids.next() {
        let mut end = start;
        while ids.peek() == Some(&(end + 1)) {
            end = ids.next().unwrap();
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
    }
    parts.join(",")
}

/// The placement resolved against the launcher's own CPUs, ready for every spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask {
    #[cfg(target_os = "linux")]
    set: Option<nix::sched::CpuSet>,
}

impl Mask {
    /// No mask: the workers inherit the launcher's placement (used where nothing is asked).
    pub fn inherit() -> Self {
        Self {
            #[cfg(target_os = "linux")]
            set: None,
        }
    }

    /// Resolves `cpus` against the CPUs the launcher may use, for workers of `ranks` processes
    /// each (1 without a group); an error when none of the asked CPUs is among them. `first`
    /// takes the first `ranks` CPUs, so that [`Mask::for_rank`] can give each rank its own.
    #[cfg(target_os = "linux")]
    pub fn resolve(cpus: &Cpus, ranks: u32) -> Result<Self, String> {
        use nix::{sched::sched_getaffinity, unistd::Pid};
        let own =
            sched_getaffinity(Pid::from_raw(0)).map_err(|err| format!("failed to read the launcher's CPUs: {err}"))?;
        let own: BTreeSet<usize> = (0..=MAX_CPU).filter(|&i| own.is_set(i).unwrap_or(false)).collect();
        // A list may name CPUs outside the launcher's own mask (`taskset -c 1 decode-baseline run
        // --cpus 0` keeps the launcher off the workers' CPU); it must name online ones.
        let online = online_cpus().unwrap_or_else(|| own.clone());
        let wanted: BTreeSet<usize> = match cpus {
            Cpus::All => return Ok(Self::inherit()),
            Cpus::First => own.iter().take(ranks.max(1) as usize).copied().collect(),
            Cpus::List(set) => set.intersection(&online).copied().collect(),
        };
        if wanted.is_empty() {
            return Err(format!(
                "--cpus {cpus}: none of these CPUs is available to the launcher (online: {})",
                list_text(&online)
            ));
        }
        let mut set = nix::sched::CpuSet::new();
        for id in wanted {
            set.set(id).map_err(|err| format!("--cpus {cpus}: CPU {id}: {err}"))?;
        }
        Ok(Self { set: Some(set) })
    }

    /// Without an affinity call, nothing is applied: placement is left to the OS.
    #[cfg(not(target_os = "linux"))]
    pub fn resolve(_cpus: &Cpus, _ranks: u32) -> Result<Self, String> {
        Ok(Self::inherit())
    }

    /// Rank `rank`'s share of a mask for `ranks` processes: its own CPU (the mask's `rank`-th)
    /// when the mask has one for every rank, else the whole mask. Two ranks that share a CPU
    /// wait milliseconds for each other in every collective (`req/findings.md` §28: an all_sum
    /// on the ring backend took 8.7 ms with both ranks on one CPU, 0.034 ms on two).
    pub fn for_rank(&self, rank: u32, ranks: u32) -> Self {
        #[cfg(target_os = "linux")]
        if let Some(set) = &self.set {
            let ids: Vec<usize> = (0..=MAX_CPU).filter(|&i| set.is_set(i).unwrap_or(false)).collect();
            if ids.len() >= ranks as usize && ranks > 1 {
                let mut own = nix::sched::CpuSet::new();
                own.set(ids[rank as usize]).expect("an id read from a CpuSet fits one");
                return Self { set: Some(own) };
            }
        }
        let _ = (rank, ranks);
        *self
    }

    /// Applies the mask to the calling process. Meant for a forked child before `exec`: one
    /// system call (`sched_setaffinity`), no allocation.
    pub fn apply_to_self(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(set) = &self.set {
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), set).map_err(std::io::Error::from)?;
        }
        Ok(())
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-1`); `None` when unreadable.
#[cfg(target_os = "linux")]
fn online_cpus() -> Option<BTreeSet<usize>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    match Cpus::parse(&text).ok()? {
        Cpus::List(set) => Some(set),
        _ => None,
    }
}

/// The CPUs process `pid` may run on, as a list (`0`, `0-1`); `None` where the system has no
/// affinity call or the process is gone.
pub fn read_back(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(pid as i32)).ok()?;
        let ids: BTreeSet<usize> = (0..=MAX_CPU).filter(|&i| set.is_set(i).unwrap_or(false)).collect();
        Some(list_text(&ids))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// The session's record: the request and the distinct masks its workers were read back with.
pub fn record(cpus: &Cpus, read_backs: &BTreeSet<String>) -> Placement {
    Placement {
        requested: cpus.text(),
        effective: (!read_backs.is_empty()).then(|| read_backs.iter().cloned().collect::<Vec<_>>().join(" / ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[usize]) -> Cpus {
        Cpus::List(ids.iter().copied().collect())
    }

    #[test]
    fn lists_ranges_and_words_parse() {
        assert_eq!(Cpus::parse("all"), Ok(Cpus::All));
        assert_eq!(Cpus::parse("first"), Ok(Cpus::First));
        assert_eq!(Cpus::parse("0"), Ok(set(&[0])));
        assert_eq!(Cpus::parse("0,1"), Ok(set(&[0, 1])));
        assert_eq!(Cpus::parse("0-3"), Ok(set(&[0, 1, 2, 3])));
        assert_eq!(Cpus::parse("0,2-3, 5"), Ok(set(&[0, 2, 3, 5])));
        assert_eq!(Cpus::parse("3-3"), Ok(set(&[3])));
    }

    #[test]
    fn bad_lists_say_what_is_expected() {
        for bad in ["", "x", "0-", "-1", "3-1", "0,,1", "1.5", "all,0", "4096"] {
            let err = Cpus::parse(bad).unwrap_err();
            assert!(err.contains("expected `all`, `first`, or CPU ids"), "{bad}: {err}");
        }
        assert!(Cpus::parse("3-1").unwrap_err().contains("runs backwards"));
    }

    #[test]
    fn lists_print_compactly_and_round_trip() {
        for text in ["0", "0-1", "0,2-3,5", "all", "first"] {
            assert_eq!(Cpus::parse(text).unwrap().text(), text);
        }
        assert_eq!(list_text(&[0, 1, 2, 5, 7, 8].into()), "0-2,5,7-8");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_list_outside_the_launchers_cpus_is_refused() {
        let err = Mask::resolve(&set(&[1000]), 1).unwrap_err();
        assert!(err.contains("none of these CPUs is available"), "{err}");
        assert!(Mask::resolve(&Cpus::First, 1).unwrap().set.is_some());
        assert_eq!(Mask::resolve(&Cpus::All, 1).unwrap(), Mask::inherit());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn each_rank_gets_its_own_cpu_when_the_mask_has_one_for_every_rank() {
        let ids = |m: Mask| -> Vec<usize> {
            let set = m.set.expect("a mask");
            (0..=MAX_CPU).filter(|&i| set.is_set(i).unwrap()).collect()
        };
        let two = Mask::resolve(&set(&[0, 1]), 2);
        let Ok(two) = two else { return }; // a machine with one CPU online cannot show it
        assert_eq!(ids(two.for_rank(0, 2)), [0]);
        assert_eq!(ids(two.for_rank(1, 2)), [1]);
        let one = Mask::resolve(&set(&[0]), 2).unwrap();
        assert_eq!(ids(one.for_rank(1, 2)), [0], "too few CPUs: the ranks share the mask");
        assert_eq!(ids(two.for_rank(0, 1)), [0, 1], "a single process keeps the whole mask");
        assert_eq!(Mask::inherit().for_rank(1, 2), Mask::inherit());
    }

    #[test]
    fn the_line_says_what_was_asked_and_got() {
        let got = record(&set(&[0]), &["0".to_owned()].into());
        assert_eq!(crate::session::placement_line(Some(&got)), "placement: --cpus 0 (workers on CPUs 0)");
        let macos = record(&Cpus::First, &BTreeSet::new());
        assert!(crate::session::placement_line(Some(&macos)).contains("left to the OS"));
        assert_eq!(crate::session::placement_line(None), "placement: not recorded");
    }
}
