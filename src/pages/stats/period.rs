//! The calendar periods of the stats page (ISO week, month, quarter, year) in UTC: which period
//! a time falls in, where a period starts, and cgit's labels.

use crate::pages::parts::format::civil_from_days;

const DAY: i64 = 86_400;
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A kind of period, ordered from shortest to longest (cgit's `max-stats` compares them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Period {
    Week,
    Month,
    Quarter,
    Year,
}

pub const ALL: [Period; 4] = [Period::Week, Period::Month, Period::Quarter, Period::Year];

impl Period {
    /// The period a `period=` value names: cgit looks at its first character only.
    pub fn from_code(code: char) -> Option<Period> {
        ALL.into_iter().find(|p| p.code() == code)
    }

    /// The period a `max-stats` value names.
    pub fn from_name(name: &str) -> Option<Period> {
        ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn code(self) -> char {
        self.name().chars().next().unwrap_or('w')
    }

    pub fn name(self) -> &'static str {
        match self {
            Period::Week => "week",
            Period::Month => "month",
            Period::Quarter => "quarter",
            Period::Year => "year",
        }
    }

    /// The number of the period `seconds` falls in; consecutive periods have consecutive
    /// numbers.
    pub fn number(self, seconds: i64) -> i64 {
        let days = seconds.div_euclid(DAY);
        if self == Period::Week {
            // 1970-01-01 was a Thursday: shift so that weeks start on Mondays
            return (days + 3).div_euclid(7);
        }
        let (year, month, _) = civil_from_days(days);
        let month0 = i64::from(month) - 1;
        match self {
            Period::Month => year * 12 + month0,
            Period::Quarter => year * 4 + month0 / 3,
            _ => year,
        }
    }

    /// The first second of period `n`.
    pub fn start(self, n: i64) -> i64 {
        let days = match self {
            Period::Week => n * 7 - 3,
            Period::Month => days_from_civil(n.div_euclid(12), n.rem_euclid(12) + 1),
            Period::Quarter => days_from_civil(n.div_euclid(4), n.rem_euclid(4) * 3 + 1),
            Period::Year => days_from_civil(n, 1),
        };
        days * DAY
    }

    /// cgit's column label: `W46 2026` (ISO week and year), `Aug 2026`, `Q3 2026`, `2026`.
    pub fn label(self, n: i64) -> String {
        match self {
            Period::Week => {
                let thursday = (self.start(n) / DAY) + 3;
                let (year, ..) = civil_from_days(thursday);
                let week = (thursday - days_from_civil(year, 1)) / 7 + 1;
                format!("W{week:02} {year}")
            }
            Period::Month => format!("{} {}", MONTHS[n.rem_euclid(12) as usize], n.div_euclid(12)),
            Period::Quarter => format!("Q{} {}", n.rem_euclid(4) + 1, n.div_euclid(4)),
            Period::Year => n.to_string(),
        }
    }
}

/// Days since 1970-01-01 of the first day of `month` (1-12) in `year`.
fn days_from_civil(year: i64, month: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30 12:00 UTC, a Monday.
    const NOW: i64 = 1_796_040_000;

    #[test]
    fn labels_like_cgit() {
        let label = |p: Period, back: i64| p.label(p.number(NOW) - back);
        assert_eq!(label(Period::Week, 0), "W49 2026");
        assert_eq!(label(Period::Week, 3), "W46 2026");
        assert_eq!(label(Period::Month, 3), "Aug 2026");
        assert_eq!(label(Period::Quarter, 0), "Q4 2026");
        assert_eq!(label(Period::Quarter, 4), "Q4 2025");
        assert_eq!(label(Period::Year, 3), "2023");
    }

    #[test]
    fn iso_weeks_at_year_ends() {
        let day = |y, m, d| (days_from_civil(y, m) + d - 1) * DAY;
        // 2021-01-03 is a Sunday in week 53 of 2020; 2024-12-30 is in week 1 of 2025
        assert_eq!(
            Period::Week.label(Period::Week.number(day(2021, 1, 3))),
            "W53 2020"
        );
        assert_eq!(
            Period::Week.label(Period::Week.number(day(2024, 12, 30))),
            "W01 2025"
        );
    }

    #[test]
    fn periods_start_where_they_begin() {
        for p in ALL {
            let n = p.number(NOW);
            assert_eq!(p.number(p.start(n)), n, "{p:?}");
            assert_eq!(p.number(p.start(n) - 1), n - 1, "{p:?}");
        }
        assert_eq!(
            Period::Week.start(Period::Week.number(NOW)),
            NOW - 12 * 3600
        );
    }
}
