//! Durations for people: the one formatter behind every table, the report page and the figures.

/// A unit a duration is shown in, with its fixed precision: `612.3 µs`, `1.24 ms`, `2.50 s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Micros,
    Millis,
    Seconds,
}

impl Unit {
    /// The unit `ns` is shown in on its own: seconds from 1 s, milliseconds from 1 ms,
    /// microseconds below.
    pub fn of_ns(ns: f64) -> Self {
        if ns >= 1e9 {
            Unit::Seconds
        } else if ns >= 1e6 {
            Unit::Millis
        } else {
            Unit::Micros
        }
    }

    /// Nanoseconds per unit.
    pub fn ns(self) -> f64 {
        match self {
            Unit::Micros => 1e3,
            Unit::Millis => 1e6,
            Unit::Seconds => 1e9,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Micros => "µs",
            Unit::Millis => "ms",
            Unit::Seconds => "s",
        }
    }

    /// `ns` in this unit: one decimal in microseconds, two otherwise.
    pub fn show(self, ns: f64) -> String {
        let value = ns / self.ns();
        match self {
            Unit::Micros => format!("{value:.1} {}", self.name()),
            Unit::Millis | Unit::Seconds => format!("{value:.2} {}", self.name()),
        }
    }
}

/// Nanoseconds for people, in the unit that suits the value: `612.3 µs`, `1.24 ms`, `2.50 s`.
pub fn human_ns(ns: f64) -> String {
    Unit::of_ns(ns).show(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_gets_its_unit_and_precision() {
        assert_eq!(human_ns(612_340.0), "612.3 µs");
        assert_eq!(human_ns(1_240_000.0), "1.24 ms");
        assert_eq!(human_ns(2_500_000_000.0), "2.50 s");
        assert_eq!(human_ns(999_999.0), "1000.0 µs");
        assert_eq!(Unit::Millis.show(612_340.0), "0.61 ms");
    }
}
