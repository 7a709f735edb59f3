//! The CPU time of the measured processes, which the host-activity record subtracts from the
//! host's busy time to see what everything else used.

use std::time::Duration;

use nix::sys::{
    resource::{getrusage, UsageWho},
    time::TimeValLike,
};

use super::linux;

/// The CPU time process `pid` has used, its threads and the children it reaped included
/// (utime + stime + cutime + cstime of `/proc/<pid>/stat`). Linux only; `None` elsewhere or when
/// the process is gone. An exited process that has not been reaped still reads: read it just
/// before `wait`. The resolution is the kernel's clock tick (10 ms at `USER_HZ` 100).
pub fn process_cpu_time(pid: u32) -> Option<Duration> {
    ticks_to_duration(linux::read_pid_ticks(pid)?, linux::clock_ticks_per_s()?)
}

/// The CPU time (user + system) of every child this process has reaped so far, and of the
/// children they reaped (`getrusage(RUSAGE_CHILDREN)`; Linux and macOS, microseconds). Its
/// change across one worker's `wait` is that worker's CPU time, provided no other child is
/// reaped meanwhile.
pub fn reaped_children_cpu_time() -> Option<Duration> {
    rusage_cpu_time(UsageWho::RUSAGE_CHILDREN)
}

/// User + system time of `getrusage(who)`.
pub(crate) fn rusage_cpu_time(who: UsageWho) -> Option<Duration> {
    let usage = getrusage(who).ok()?;
    let micros = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
    Some(Duration::from_micros(u64::try_from(micros).ok()?))
}

pub(crate) fn ticks_to_duration(ticks: u64, hz: u64) -> Option<Duration> {
    let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(hz);
    Some(Duration::from_nanos(u64::try_from(nanos).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_convert_at_the_clock_rate() {
        assert_eq!(ticks_to_duration(150, 100), Some(Duration::from_millis(1500)));
        assert_eq!(ticks_to_duration(0, 100), Some(Duration::ZERO));
        assert_eq!(ticks_to_duration(u64::MAX, 1), None);
    }

    #[test]
    fn this_process_has_a_cpu_time_and_a_missing_one_has_none() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time(std::process::id()).is_some());
        }
        // Above the kernel's pid_max (at most 2^22), so no process has it.
        assert_eq!(process_cpu_time(u32::MAX - 1), None);
        assert!(reaped_children_cpu_time().is_some());
    }
}
