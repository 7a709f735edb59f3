//! UTC wall-clock stamps in RFC 3339 (`2026-05-01T12:34:56.123456Z`) for the claim, ready and
//! report files, without a calendar dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current UTC time, RFC 3339 with microseconds and a `Z` suffix.
pub fn utc_now_rfc3339() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    format_unix(since.as_secs(), since.subsec_micros())
}

/// Formats seconds and microseconds since the Unix epoch.
pub fn format_unix(secs: u64, micros: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_unix(0, 0), "1970-01-01T00:00:00.000000Z");
        // 2000-02-29 (a leap day in a century leap year) 12:34:56.
        assert_eq!(format_unix(951_827_696, 7), "2000-02-29T12:34:56.000007Z");
        assert_eq!(format_unix(1_767_225_599, 999_999), "2025-12-31T23:59:59.999999Z");
    }
}
