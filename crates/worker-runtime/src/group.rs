//! The worker side of rank groups (`req/distributed.md`): the checks on a job's `group` before
//! the driver joins it, and the check of what the joined group reports.

use std::path::Path;

use decode_baseline_wire::group::{RankIdentity, RankJob, HOSTFILE_ENV, RANK_ENV};

use crate::refusal::Refusal;

/// Checks a rank's job before the group is joined: a rank inside a group of two or more, the
/// launcher's environment agreeing with the job (MLX reads the environment, the report the
/// job), and a host file that lists one entry per rank.
pub fn check_rank_job(group: &RankJob) -> Result<(), Refusal> {
    if group.ranks < 2 {
        return Err(Refusal::new("group.ranks", format!("expected at least 2, found {}", group.ranks)));
    }
    if group.rank >= group.ranks {
        return Err(Refusal::new("group.rank", format!("expected 0..{}, found {}", group.ranks, group.rank)));
    }
    check_env(RANK_ENV, &group.rank.to_string())?;
    check_env(HOSTFILE_ENV, &group.hostfile.to_string_lossy())?;
    let entries = hostfile_entries(&group.hostfile)?;
    if entries != group.ranks as usize {
        return Err(Refusal::new(
            "group.hostfile",
            format!("{} lists {entries} ranks, expected {}", group.hostfile.display(), group.ranks),
        ));
    }
    Ok(())
}

/// Checks what the joined group reports against the job.
pub fn check_joined(group: &RankJob, joined: &RankIdentity) -> Result<(), Refusal> {
    if joined.ranks != group.ranks {
        return Err(Refusal::mismatch("group.ranks", group.ranks, joined.ranks));
    }
    if joined.rank != group.rank {
        return Err(Refusal::mismatch("group.rank", group.rank, joined.rank));
    }
    if joined.backend != group.backend {
        return Err(Refusal::mismatch("group.backend", group.backend.as_str(), joined.backend.as_str()));
    }
    Ok(())
}

fn check_env(name: &str, expected: &str) -> Result<(), Refusal> {
    match std::env::var(name) {
        Ok(found) if found == expected => Ok(()),
        Ok(found) => Err(Refusal::new(format!("environment {name}"), format!("expected {expected}, found {found}"))),
        Err(_) => Err(Refusal::new(format!("environment {name}"), format!("expected {expected}, found it unset"))),
    }
}

fn hostfile_entries(path: &Path) -> Result<usize, Refusal> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| Refusal::new("group.hostfile", format!("failed to read {}: {err}", path.display())))?;
    let hosts: Vec<Vec<String>> = serde_json::from_str(&text).map_err(|err| {
        Refusal::new("group.hostfile", format!("{} is not a JSON list of lists of \"ip:port\": {err}", path.display()))
    })?;
    Ok(hosts.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use decode_baseline_wire::group::GroupBackend;

    fn job(rank: u32, ranks: u32) -> RankJob {
        RankJob { rank, ranks, backend: GroupBackend::Ring, hostfile: "/nonexistent".into() }
    }

    #[test]
    fn a_group_of_one_and_a_rank_past_the_size_are_refused_naming_the_field() {
        assert_eq!(check_rank_job(&job(0, 1)).unwrap_err().field, "group.ranks");
        assert_eq!(check_rank_job(&job(2, 2)).unwrap_err().field, "group.rank");
    }

    #[test]
    fn the_joined_group_must_be_the_jobs() {
        let joined = RankIdentity { rank: 1, ranks: 2, backend: GroupBackend::Ring };
        assert!(check_joined(&job(1, 2), &joined).is_ok());
        assert_eq!(check_joined(&job(0, 2), &joined).unwrap_err().field, "group.rank");
        assert_eq!(check_joined(&job(1, 3), &joined).unwrap_err().field, "group.ranks");
    }
}
