//! Linux powercap: the RAPL zones under `/sys/class/powercap` (`intel-rapl:N` a CPU package,
//! `intel-rapl:N:M` its subzones such as `dram`), each an `energy_uj` counter that wraps at
//! `max_energy_range_uj`. Package and subzones are separate domains (`powercap:package-0`,
//! `powercap:package-0/dram`). `energy_uj` is readable by root only since Linux 5.10; many VMs
//! have no `/sys/class/powercap` at all. The root folder and the file reader are injectable, so
//! the tests drive every path on a fake tree.

use std::{
    io,
    path::{Path, PathBuf},
};

use super::source::{Counter, DomainSample, EnergySource, Missing, Unit};

/// Where the kernel puts the powercap zones.
pub const POWERCAP_ROOT: &str = "/sys/class/powercap";

/// Reads a file's text (`std::fs::read_to_string`, or a test's stand-in).
pub type ReadFile = fn(&Path) -> io::Result<String>;

/// One zone: its domain name, its counter file and its wrap range.
#[derive(Debug, Clone, PartialEq)]
struct Zone {
    domain: String,
    energy: PathBuf,
    wrap: Option<u64>,
}

/// The readable RAPL zones of a powercap tree.
#[derive(Debug)]
pub struct Powercap {
    zones: Vec<Zone>,
    read: ReadFile,
}

impl Powercap {
    /// The host's zones.
    pub fn open() -> Result<Self, Missing> {
        Self::open_at(Path::new(POWERCAP_ROOT), |p| std::fs::read_to_string(p))
    }

    /// The zones under `root`, read with `read`: every `intel-rapl:N` and `intel-rapl:N:M`
    /// entry, named by its `name` file. The first counter is read once so that a tree the
    /// user may not read says so now, once, rather than at every request.
    pub fn open_at(root: &Path, read: ReadFile) -> Result<Self, Missing> {
        let entries = std::fs::read_dir(root).map_err(|_| Missing::NoPowercap { path: root.to_owned() })?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| zone_index(n).is_some())
            .collect();
        names.sort_by_key(|n| zone_index(n));
        let mut zones = Vec::new();
        for name in &names {
            let dir = root.join(name);
            let own = read_name(read, &dir).unwrap_or_else(|| name.clone());
            let domain = match zone_index(name) {
                Some((package, Some(_))) => {
                    let parent = read_name(read, &root.join(format!("intel-rapl:{package}")))
                        .unwrap_or_else(|| format!("package-{package}"));
                    format!("powercap:{parent}/{own}")
                }
                _ => format!("powercap:{own}"),
            };
            let wrap = read(&dir.join("max_energy_range_uj")).ok().and_then(|t| t.trim().parse().ok());
            zones.push(Zone { domain, energy: dir.join("energy_uj"), wrap });
        }
        let first = zones.first().ok_or_else(|| Missing::NoZones { path: root.to_owned() })?;
        read(&first.energy).map_err(|err| classify(&err, &first.energy))?;
        Ok(Powercap { zones, read })
    }
}

/// `intel-rapl:N` → `(N, None)`, `intel-rapl:N:M` → `(N, Some(M))`; anything else `None`.
fn zone_index(name: &str) -> Option<(u32, Option<u32>)> {
    let mut parts = name.strip_prefix("intel-rapl:")?.split(':');
    let package = parts.next()?.parse().ok()?;
    let sub = parts.next().map(str::parse).transpose().ok()?;
    parts.next().is_none().then_some((package, sub))
}

fn read_name(read: ReadFile, dir: &Path) -> Option<String> {
    read(&dir.join("name")).ok().map(|n| n.trim().to_owned()).filter(|n| !n.is_empty())
}

/// A counter that cannot be read: not root, or another failure named with its file.
fn classify(err: &io::Error, path: &Path) -> Missing {
    match err.kind() {
        io::ErrorKind::PermissionDenied => Missing::NotRoot { path: path.to_owned() },
        _ => Missing::Unreadable { path: path.to_owned(), detail: err.to_string() },
    }
}

impl EnergySource for Powercap {
    fn name(&self) -> &'static str {
        "powercap"
    }

    fn domains(&self) -> Vec<String> {
        self.zones.iter().map(|z| z.domain.clone()).collect()
    }

    fn read(&mut self) -> Vec<DomainSample> {
        self.zones
            .iter()
            .map(|z| {
                let value = (self.read)(&z.energy).ok().and_then(|t| t.trim().parse().ok());
                let energy = value.map(|value| Counter { value, unit: Unit::Microjoules, wrap: z.wrap });
                DomainSample::energy(z.domain.clone(), energy)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A powercap tree as the kernel lays it out: package 0 with a `dram` subzone, package 1
    /// without, and an unrelated `intel-rapl` control type entry.
    fn tree(root: &Path) {
        let zone = |rel: &str, name: &str, energy: u64, range: u64| {
            let dir = root.join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(dir.join("energy_uj"), format!("{energy}\n")).unwrap();
            std::fs::write(dir.join("max_energy_range_uj"), format!("{range}\n")).unwrap();
        };
        zone("intel-rapl:0", "package-0", 1_000, 262_143_328_850);
        zone("intel-rapl:0:0", "dram", 500, 65_712_999_613);
        zone("intel-rapl:1", "package-1", 7, 262_143_328_850);
        std::fs::create_dir_all(root.join("intel-rapl")).unwrap();
    }

    fn fs_read(path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    #[test]
    fn a_fake_tree_gives_packages_and_subzones_with_their_wrap_ranges() {
        let tmp = tempfile::tempdir().unwrap();
        tree(tmp.path());
        let mut pc = Powercap::open_at(tmp.path(), fs_read).unwrap();
        assert_eq!(pc.domains(), ["powercap:package-0", "powercap:package-0/dram", "powercap:package-1"]);
        let first = pc.read();
        assert_eq!(
            first[0].energy,
            Some(Counter { value: 1_000, unit: Unit::Microjoules, wrap: Some(262_143_328_850) })
        );
        assert_eq!(first[1].energy.map(|c| (c.value, c.wrap)), Some((500, Some(65_712_999_613))));
        // The counter moves (and wraps) between two reads: the reader sees the new values.
        std::fs::write(tmp.path().join("intel-rapl:0/energy_uj"), "262143328000\n").unwrap();
        std::fs::write(tmp.path().join("intel-rapl:0:0/energy_uj"), "x\n").unwrap();
        let second = pc.read();
        assert_eq!(second[0].energy.map(|c| c.value), Some(262_143_328_000));
        assert_eq!(second[1].energy, None, "an unparsable counter reads as unreadable, that time only");
    }

    #[test]
    fn a_missing_tree_an_empty_one_and_a_root_only_counter_say_why() {
        let tmp = tempfile::tempdir().unwrap();
        let absent = tmp.path().join("powercap");
        let err = Powercap::open_at(&absent, fs_read).unwrap_err();
        assert_eq!(err, Missing::NoPowercap { path: absent.clone() });
        assert_eq!(err.to_string(), format!("{} absent", absent.display()));

        std::fs::create_dir(&absent).unwrap();
        assert_eq!(Powercap::open_at(&absent, fs_read).unwrap_err(), Missing::NoZones { path: absent.clone() });

        // As root (this project's machines) chmod denies nothing, so the reader stands in for
        // the kernel's EACCES on energy_uj since Linux 5.10.
        tree(&absent);
        fn denied(path: &Path) -> io::Result<String> {
            if path.ends_with("energy_uj") {
                return Err(io::Error::from(io::ErrorKind::PermissionDenied));
            }
            std::fs::read_to_string(path)
        }
        let err = Powercap::open_at(&absent, denied).unwrap_err();
        let counter = absent.join("intel-rapl:0/energy_uj");
        assert_eq!(err, Missing::NotRoot { path: counter.clone() });
        assert_eq!(
            err.to_string(),
            format!("not root (energy_uj is root-only since Linux 5.10): {}", counter.display())
        );
        fn broken(path: &Path) -> io::Result<String> {
            if path.ends_with("energy_uj") {
                return Err(io::Error::other("EIO"));
            }
            std::fs::read_to_string(path)
        }
        assert!(matches!(Powercap::open_at(&absent, broken), Err(Missing::Unreadable { path, .. }) if path == counter));
    }

    #[test]
    fn zone_names_are_parsed_strictly() {
        assert_eq!(zone_index("intel-rapl:0"), Some((0, None)));
        assert_eq!(zone_index("intel-rapl:1:2"), Some((1, Some(2))));
        assert_eq!(zone_index("intel-rapl"), None);
        assert_eq!(zone_index("intel-rapl:a"), None);
        assert_eq!(zone_index("intel-rapl:0:1:2"), None);
        assert_eq!(zone_index("dtpm:0"), None);
    }
}
