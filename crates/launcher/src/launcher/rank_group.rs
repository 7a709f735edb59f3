//! Rank groups on the launcher's side (`req/distributed.md`): a worker run of a session with a
//! `group` is `ranks` processes. Rank 0 keeps the worker's folder and job; rank `r` gets the
//! folder `<worker folder>.rank<r>` with its own job, and every rank's job names the host file
//! `<worker folder>.hostfile.json`, which the launcher writes just before it starts the group,
//! with loopback ports it found free (or the job's `hosts`, checked).

use std::{
    net::{Ipv4Addr, SocketAddr, TcpListener},
    path::{Path, PathBuf},
};

use anyhow::Context;
use decode_baseline_pins::once;
use decode_baseline_wire::{
    group::{loopback_hosts, ring_hostfile, GroupBackend, RankJob, SessionGroup, HOSTFILE_ENV, RANK_ENV},
    outdir::JOB_FILE,
    session::RankRun,
    WorkerJob, WorkerReport,
};

use super::{
    supervise::{self, Outcome},
    validate::{self, ExpectedIdentity},
};

/// A rank past rank 0 of a worker's group, its folder and job written.
#[derive(Debug, Clone)]
pub struct RankPrepared {
    pub rank: u32,
    pub out_dir: PathBuf,
    pub job: WorkerJob,
    pub command: Vec<String>,
}

/// The folder of rank `rank` (1 and up) of the worker whose folder is `out_dir`.
pub fn rank_dir(out_dir: &Path, rank: u32) -> PathBuf {
    suffixed(out_dir, &format!(".rank{rank}"))
}

/// The host file of the group whose rank 0 has the folder `out_dir`.
pub fn hostfile_path(out_dir: &Path) -> PathBuf {
    suffixed(out_dir, &format!(".{}", decode_baseline_wire::group::HOSTFILE_NAME))
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    path.with_file_name(name)
}

/// Checks a session job's `group` before anything is written: a group of two or more, hosts
/// (when given) one per rank, and a backend and hosts this launcher can start itself unless
/// it only prints the commands (`dry_run`). Returns the problem, naming the field.
pub fn check(group: &SessionGroup, dry_run: bool) -> Result<(), String> {
    if group.ranks < 2 {
        return Err(format!("group.ranks: expected at least 2, found {}", group.ranks));
    }
    if let Some(hosts) = &group.hosts {
        if hosts.len() != group.ranks as usize {
            return Err(format!("group.hosts: expected {} entries (one per rank), found {}", group.ranks, hosts.len()));
        }
        for (rank, host) in hosts.iter().enumerate() {
            host.parse::<SocketAddr>().map_err(|_| {
                format!("group.hosts[{rank}]: expected \"ip:port\" (an IP, not a host name), found {host:?}")
            })?;
        }
    }
    if dry_run {
        return Ok(());
    }
    if group.backend != GroupBackend::Ring {
        return Err(format!(
            "group.backend: this launcher starts `ring` groups only, found `{}`; `run --dry-run` prints each rank's command to start on its host (req/distributed.md)",
            group.backend.as_str()
        ));
    }
    if let Some(remote) = group.hosts.iter().flatten().find(|h| !is_loopback(h)) {
        return Err(format!(
            "group.hosts: {remote} is not on this machine; the launcher starts ranks on this machine only. `run --dry-run` prints each host's command (req/distributed.md)"
        ));
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    host.parse::<SocketAddr>().is_ok_and(|a| a.ip().is_loopback())
}

/// Gives rank 0's `job` its part of the group and writes the jobs of ranks 1.. into their new
/// folders; `program` is the adapter's program, each rank's command is it with `--out-dir`.
pub fn prepare(
    job: &mut WorkerJob,
    out_dir: &Path,
    group: &SessionGroup,
    program: &[String],
) -> anyhow::Result<Vec<RankPrepared>> {
    let rank_job =
        |rank: u32| RankJob { rank, ranks: group.ranks, backend: group.backend, hostfile: hostfile_path(out_dir) };
    job.group = Some(rank_job(0));
    let mut ranks = Vec::new();
    for rank in 1..group.ranks {
        let dir = rank_dir(out_dir, rank);
        std::fs::create_dir(&dir).with_context(|| format!("failed to create rank folder {}", dir.display()))?;
        let job =
            WorkerJob { run_id: format!("{}.rank{rank}", job.run_id), group: Some(rank_job(rank)), ..job.clone() };
        write_job(&dir, &job)?;
        let command = super::plan::worker_command(program, &dir);
        ranks.push(RankPrepared { rank, out_dir: dir, job, command });
    }
    Ok(ranks)
}

/// Writes `job` as `<dir>/job.json`, once.
pub fn write_job(dir: &Path, job: &WorkerJob) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(job)?;
    bytes.push(b'\n');
    let path = dir.join(JOB_FILE);
    once::create_new(&path, &bytes).with_context(|| format!("failed to write {}", path.display()))
}

/// The environment MLX reads in rank `rank`'s process.
pub fn rank_env(rank: u32, hostfile: &Path) -> Vec<(String, String)> {
    vec![(RANK_ENV.to_owned(), rank.to_string()), (HOSTFILE_ENV.to_owned(), hostfile.to_string_lossy().into_owned())]
}

/// Writes the group's host file at `path` just before the group starts: the job's `hosts`,
/// whose loopback ports must be free, or one loopback port per rank that the system gave out
/// as free (all held at once, so they differ, and released just before the ranks bind them).
pub fn write_hostfile(path: &Path, group: &SessionGroup) -> Result<Vec<String>, String> {
    let hosts = match &group.hosts {
        Some(hosts) => {
            for host in hosts.iter().filter(|h| is_loopback(h)) {
                let addr: SocketAddr = host.parse().map_err(|_| format!("group.hosts: {host} is not \"ip:port\""))?;
                TcpListener::bind(addr)
                    .map_err(|err| format!("group.hosts: port {} on {} is taken ({err})", addr.port(), addr.ip()))?;
            }
            hosts.clone()
        }
        None => loopback_hosts(&free_ports(group.ranks)?),
    };
    once::create_new(path, ring_hostfile(&hosts).as_bytes())
        .map_err(|err| format!("failed to write the host file {}: {err}", path.display()))?;
    Ok(hosts)
}

fn free_ports(n: u32) -> Result<Vec<u16>, String> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("failed to find {n} free loopback ports: {err}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|err| format!("failed to read a loopback port: {err}"))
}

/// The record of ranks 1 and up of a group from what the supervisor saw of each: its report
/// validated against its job as any worker's, and its tokens checked against rank 0's (every
/// rank computes the same logits after each all_sum, so its argmax stream must be rank 0's).
/// Each problem also goes to `problems`, prefixed by the rank's run id.
pub fn record_ranks(
    ranks: &[RankPrepared],
    outcomes: Vec<Outcome>,
    expected: &ExpectedIdentity,
    rank0: Option<&WorkerReport>,
    problems: &mut Vec<String>,
) -> Vec<RankRun> {
    ranks
        .iter()
        .zip(outcomes)
        .map(|(r, outcome)| {
            let exit_code = supervise::exit_code(&outcome.status);
            let (report, mut errors) =
                validate::read_and_validate(&r.out_dir, &r.job, expected, outcome.pid, exit_code);
            if let (Some(report), Some(rank0)) = (&report, rank0) {
                errors.extend(token_differences(report, rank0));
            }
            problems.extend(errors.iter().map(|e| format!("{}: {e}", r.job.run_id)));
            RankRun {
                rank: r.rank,
                run_id: r.job.run_id.clone(),
                command: r.command.clone(),
                pid: Some(outcome.pid),
                exit_code,
                signal: supervise::exit_signal(&outcome.status),
                intervention: super::supervise::describe(outcome.intervention, outcome.sent),
                wall_ns: outcome.wall.as_nanos() as u64,
                status: report.as_ref().map(|r| r.status),
                error: report.and_then(|r| r.error),
                validation_errors: errors,
            }
        })
        .collect()
}

/// Where a rank's tokens differ from rank 0's, request by request (first token and each
/// step's argmax), for the requests both completed.
fn token_differences(report: &WorkerReport, rank0: &WorkerReport) -> Vec<String> {
    let mut found = Vec::new();
    for (mine, theirs) in report.requests.iter().zip(&rank0.requests) {
        if mine.first_token != theirs.first_token {
            found.push(format!(
                "request {}: first token {}, rank 0's {}",
                mine.index, mine.first_token, theirs.first_token
            ));
        }
        let step = mine.steps.iter().zip(&theirs.steps).find(|(a, b)| a.argmax != b.argmax);
        if let Some((a, b)) = step {
            found.push(format!(
                "request {}: argmax {} at position {}, rank 0's {} (the ranks' logits differ)",
                mine.index, a.argmax, a.position, b.argmax
            ));
        }
        if mine.steps.len() != theirs.steps.len() {
            found.push(format!("request {}: {} steps, rank 0's {}", mine.index, mine.steps.len(), theirs.steps.len()));
        }
    }
    found
}

/// The line `run --dry-run` prints for rank `rank`: where it runs and its command with the
/// environment MLX reads.
pub fn rank_line(group: &SessionGroup, rank: usize, env: &[(String, String)], argv: &[String]) -> String {
    let host = match &group.hosts {
        Some(hosts) => format!("on {}", hosts[rank]),
        None => "on this machine".to_owned(),
    };
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("rank {rank} {host}: {} {}", env.join(" "), argv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(ranks: u32, hosts: Option<Vec<&str>>) -> SessionGroup {
        SessionGroup {
            ranks,
            backend: GroupBackend::Ring,
            hosts: hosts.map(|h| h.into_iter().map(str::to_owned).collect()),
        }
    }

    #[test]
    fn folders_of_the_ranks_and_the_host_file_sit_beside_rank_0s() {
        let dir = Path::new("/s/cell/controlled-0");
        assert_eq!(rank_dir(dir, 1), Path::new("/s/cell/controlled-0.rank1"));
        assert_eq!(hostfile_path(dir), Path::new("/s/cell/controlled-0.hostfile.json"));
    }

    #[test]
    fn a_group_is_refused_naming_the_field() {
        assert!(check(&group(1, None), false).unwrap_err().starts_with("group.ranks"));
        assert!(check(&group(2, Some(vec!["127.0.0.1:1"])), false).unwrap_err().starts_with("group.hosts"));
        assert!(check(&group(2, Some(vec!["a:1", "b:2"])), true).unwrap_err().starts_with("group.hosts[0]"));
        let remote = group(2, Some(vec!["10.0.0.1:5000", "10.0.0.2:5000"]));
        assert!(check(&remote, false).unwrap_err().contains("not on this machine"));
        assert!(check(&remote, true).is_ok(), "a dry run prints them");
        let nccl = SessionGroup { backend: GroupBackend::Nccl, ..group(2, None) };
        assert!(check(&nccl, false).unwrap_err().starts_with("group.backend"));
        assert!(check(&group(2, None), false).is_ok());
    }

    #[test]
    fn the_host_file_lists_distinct_free_ports_and_a_taken_port_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = write_hostfile(&dir.path().join("h.json"), &group(3, None)).unwrap();
        assert_eq!(hosts.len(), 3);
        assert_eq!(hosts.iter().collect::<std::collections::BTreeSet<_>>().len(), 3);
        let written: Vec<Vec<String>> =
            serde_json::from_slice(&std::fs::read(dir.path().join("h.json")).unwrap()).unwrap();
        assert_eq!(written, hosts.iter().map(|h| vec![h.clone()]).collect::<Vec<_>>());

        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let fixed = format!("127.0.0.1:{port}");
        let problem = write_hostfile(&dir.path().join("t.json"), &group(2, Some(vec![&fixed, "127.0.0.1:1"])));
        assert!(problem.unwrap_err().contains(&format!("port {port} on 127.0.0.1 is taken")));
        assert!(!dir.path().join("t.json").exists(), "nothing written for a refused group");
    }
}
