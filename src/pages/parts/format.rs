//! Dates and ages as cgit prints them.

use gix::date::Time;

const MINUTE: i64 = 60;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
const WEEK: i64 = 7 * DAY;
const YEAR: i64 = 365 * DAY;
/// cgit's month is a twelfth of its 365-day year: 30 days 10 hours, not a whole number of days.
const MONTH: f64 = YEAR as f64 / 12.0;

/// Civil date (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
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

/// The broken-down wall-clock time of `t` in its own offset.
fn fields(t: Time) -> (i64, u32, u32, i64, i64, i64) {
    let local = t.seconds + i64::from(t.offset);
    let (y, m, d) = civil_from_days(local.div_euclid(DAY));
    let secs = local.rem_euclid(DAY);
    (y, m, d, secs / HOUR, secs % HOUR / MINUTE, secs % MINUTE)
}

fn offset_string(offset: i32) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let abs = offset.unsigned_abs();
    format!("{sign}{:02}{:02}", abs / 3600, abs % 3600 / 60)
}

/// `2026-11-30 18:00:00 +0100`
pub fn iso_date(t: Time) -> String {
    let (y, m, d, hh, mm, ss) = fields(t);
    format!(
        "{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02} {}",
        offset_string(t.offset)
    )
}

/// `2026-11-30T17:00:00Z`: strict ISO 8601 in UTC, as Atom wants it.
pub fn iso_utc(t: Time) -> String {
    let (y, m, d, hh, mm, ss) = fields(Time::new(t.seconds, 0));
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// `2026-11-30`
pub fn short_date(t: Time) -> String {
    let (y, m, d, ..) = fields(t);
    format!("{y:04}-{m:02}-{d:02}")
}

/// RFC 1123 date for HTTP headers (`Last-Modified`).
pub fn http_date(seconds: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, m, d, hh, mm, ss) = fields(Time::new(seconds, 0));
    let weekday = DAYS[seconds.div_euclid(DAY).rem_euclid(7) as usize];
    format!(
        "{weekday}, {d:02} {} {y:04} {hh:02}:{mm:02}:{ss:02} GMT",
        MONTHS[m as usize - 1]
    )
}

/// An age as cgit's `span.age-*`: (css class, text).
///
/// The unit is the largest whose double still exceeds the age (minutes below two hours, hours
/// below two days, days below two weeks, weeks below two months, months below two years), and
/// the count is the age in that unit rounded to the nearest whole number, a half to the even
/// one (as C's `%.0f` prints it). Checked against cgit 1.2: 165 days is "5 months", 182 days
/// "6 months", 60 days "9 weeks", 729 days "24 months", 1278 days "4 years".
pub fn age(t: Time, now: i64) -> (&'static str, String) {
    let secs = (now - t.seconds).max(0) as f64;
    let count = |unit: f64| (secs / unit).round_ties_even();
    let units: [(f64, &'static str, &str); 5] = [
        (MINUTE as f64, "age-mins", "min."),
        (HOUR as f64, "age-hours", "hours"),
        (DAY as f64, "age-days", "days"),
        (WEEK as f64, "age-weeks", "weeks"),
        (MONTH, "age-months", "months"),
    ];
    let next = [HOUR as f64, DAY as f64, WEEK as f64, MONTH, YEAR as f64];
    for ((unit, class, word), limit) in units.into_iter().zip(next) {
        if secs < 2.0 * limit {
            return (class, format!("{} {word}", count(unit)));
        }
    }
    ("age-years", format!("{} years", count(YEAR as f64)))
}

/// Whether the log page shows an absolute date instead of an age (older than two weeks).
pub fn is_old(t: Time, now: i64) -> bool {
    now - t.seconds > 2 * WEEK
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_own_offset() {
        let t = Time::new(1_700_000_000, 3600);
        assert_eq!(iso_date(t), "2023-11-14 23:13:20 +0100");
        assert_eq!(short_date(Time::new(0, -1800)), "1969-12-31");
        assert_eq!(iso_date(Time::new(0, -5400)), "1969-12-31 22:30:00 -0130");
        assert_eq!(iso_utc(t), "2023-11-14T22:13:20Z");
        assert_eq!(http_date(1_700_000_000), "Tue, 14 Nov 2023 22:13:20 GMT");
    }

    #[test]
    fn ages_switch_units_like_cgit() {
        let t = Time::new(0, 0);
        assert_eq!(age(t, 30 * 60), ("age-mins", "30 min.".into()));
        assert_eq!(age(t, 3 * HOUR), ("age-hours", "3 hours".into()));
        assert_eq!(age(t, 3 * DAY), ("age-days", "3 days".into()));
        assert_eq!(age(t, 3 * WEEK), ("age-weeks", "3 weeks".into()));
        assert_eq!(age(t, 90 * DAY), ("age-months", "3 months".into()));
        assert_eq!(age(t, 3 * YEAR), ("age-years", "3 years".into()));
    }

    /// Boundary ages: the whole-minute and whole-day ones as Debian's cgit 1.2 printed them for
    /// branches that old; the exact halves (90 s, 150 s) as C's `%.0f` rounds them.
    #[test]
    fn ages_at_boundaries_like_cgit() {
        let t = Time::new(0, 0);
        let cases: [(i64, &str, &str); 22] = [
            (0, "age-mins", "0 min."),
            (90, "age-mins", "2 min."),
            (150, "age-mins", "2 min."),
            (119 * MINUTE, "age-mins", "119 min."),
            (2 * HOUR, "age-hours", "2 hours"),
            (2879 * MINUTE, "age-hours", "48 hours"),
            (2 * DAY, "age-days", "2 days"),
            (14 * DAY - 1, "age-days", "14 days"),
            (14 * DAY, "age-weeks", "2 weeks"),
            (59 * DAY, "age-weeks", "8 weeks"),
            (60 * DAY, "age-weeks", "9 weeks"),
            (61 * DAY, "age-months", "2 months"),
            (165 * DAY, "age-months", "5 months"),
            (167 * DAY, "age-months", "5 months"),
            (182 * DAY, "age-months", "6 months"),
            (366 * DAY, "age-months", "12 months"),
            (729 * DAY, "age-months", "24 months"),
            (730 * DAY, "age-years", "2 years"),
            (1277 * DAY, "age-years", "3 years"),
            (1278 * DAY, "age-years", "4 years"),
            (-5, "age-mins", "0 min."),
            (1095 * DAY, "age-years", "3 years"),
        ];
        for (secs, class, text) in cases {
            assert_eq!(age(t, secs), (class, text.to_string()), "{secs} s");
        }
    }
}
