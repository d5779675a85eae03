//! The stats page on a small generated repository: commit counts per author and period equal
//! to `git shortlog`, top authors and "Others", markup and labels equal to cgit's, disabled and
//! unknown periods refused.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

const DAY: i64 = 86_400;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

struct Site {
    rc: PathBuf,
    work: PathBuf,
}

static SITE: LazyLock<Site> = LazyLock::new(stats_site);

/// Authors committing just before midnight on days before now, a merge and an old root commit;
/// `r` has `max-stats=year`, `m` has `max-stats=month`, `off` has none.
fn stats_site() -> Site {
    let dir = shared_dir("stats");
    let work = dir.join("work");
    init_repo(&work);
    let now = now();
    let day_end = |days_ago: i64| (now / DAY - days_ago) * DAY + DAY - 10;
    commit_as(&work, "Old Timer", day_end(800), "root");
    let plan: &[(&str, i64, &str)] = &[
        ("Ada", 500, "a.txt"),
        ("Bob", 370, "sub/b.txt"),
        ("Ada", 200, "a.txt"),
        ("Cy", 120, "sub/c.txt"),
        ("Bob", 95, "a.txt"),
        ("Ada", 60, "sub/a.txt"),
        ("Dee", 40, "d.txt"),
        ("Bob", 25, "sub/b.txt"),
        ("Ada", 20, "a.txt"),
        ("Cy", 15, "sub/c.txt"),
        ("Ada", 9, "a.txt"),
        ("Eve & Co", 8, "sub/e.txt"),
        ("Bob", 3, "a.txt"),
    ];
    for (i, (author, days, file)) in plan.iter().enumerate() {
        write(&work, file, format!("{i}\n"));
        commit_as(&work, author, day_end(*days), &format!("change {i}"));
    }
    git(&work, &["checkout", "-q", "-b", "side", "HEAD~2"]);
    write(&work, "sub/side.txt", "side\n");
    commit_as(&work, "Sid", day_end(2), "side work");
    git(&work, &["checkout", "-q", "main"]);
    let merge = ["merge", "-q", "--no-ff", "-m", "merge side", "side"];
    git_dated(&work, &merge, now - 60, Some("Merger"));
    let rc = r_and_off_rc(&dir, &work.join(".git"), "repo.max-stats=year");
    let extra = format!(
        "\nrepo.url=m\nrepo.path={}/.git\nrepo.max-stats=month\n",
        work.display()
    );
    let mut text = std::fs::read_to_string(&rc).unwrap();
    text.push_str(&extra);
    std::fs::write(&rc, text).unwrap();
    Site { rc, work }
}

/// `date -u` output for `args`.
fn date(args: &[&str]) -> String {
    let out = std::process::Command::new("date")
        .env("TZ", "UTC")
        .arg("-u")
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The first day (YYYY-MM-DD) of the four-period window ending with the current period.
fn window_start(period: &str) -> String {
    let today = date(&["+%F"]);
    let (year, month): (i64, i64) = (today[..4].parse().unwrap(), today[5..7].parse().unwrap());
    match period {
        "w" => {
            let weekday: i64 = date(&["+%u"]).parse().unwrap();
            date(&["-d", &format!("{today} -{} days", weekday - 1 + 21), "+%F"])
        }
        "m" => date(&["-d", &format!("{year}-{month:02}-01 -3 months"), "+%F"]),
        "q" => {
            let first = (month - 1) / 3 * 3 + 1;
            date(&["-d", &format!("{year}-{first:02}-01 -9 months"), "+%F"])
        }
        _ => format!("{}-01-01", year - 3),
    }
}

/// `git shortlog -sn --no-merges` since `start`, as author → count.
fn shortlog(work: &Path, start: &str, path: Option<&str>) -> BTreeMap<String, u64> {
    let since = format!("--since={start} 00:00:00 +0000");
    let mut args = vec!["shortlog", "-sn", "--no-merges", since.as_str(), "main"];
    if let Some(p) = path {
        args.extend(["--", p]);
    }
    git(work, &args)
        .lines()
        .map(|l| {
            let (n, name) = l.trim().split_once('\t').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// Author → total of the stats table (names unescaped).
fn stats_totals(html: &str) -> BTreeMap<String, u64> {
    let table = between(html, "<table class='stats'>", "</table>");
    table
        .split("<tr><td class='left'>")
        .skip(1)
        .map(|row| {
            let name = row[..row.find("</td>").unwrap()]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&");
            let total = between(row, "<td class='sum'>", "</td>")["<td class='sum'>".len()..]
                .parse()
                .unwrap();
            (name, total)
        })
        .collect()
}

fn grand_total(html: &str) -> u64 {
    let row = between(html, "<td class='total'>Total</td>", "</tr>");
    let last = row.rsplit("<td class='sum'>").next().unwrap();
    last[..last.find("</td>").unwrap()].parse().unwrap()
}

#[test]
fn stats_count_like_git_shortlog() {
    let site = &*SITE;
    let server = Server::start(&site.rc);
    for period in ["w", "m", "q", "y"] {
        let start = window_start(period);
        for path in [None, Some("sub")] {
            let url = match path {
                Some(p) => format!("/r/stats/{p}?period={period}&ofs=-1"),
                None => format!("/r/stats/?period={period}&ofs=-1"),
            };
            let response = server.get(&url);
            assert_eq!(response.status, 200, "{url}");
            let html = response.text();
            let expected = shortlog(&site.work, &start, path);
            assert_eq!(stats_totals(&html), expected, "{url} since {start}");
            assert_eq!(grand_total(&html), expected.values().sum::<u64>(), "{url}");
            assert!(!html.contains("Merger"), "merges are not counted");
        }
    }
    // the current period is the last column, labelled like cgit
    let week = server.page("/r/stats/");
    let this_week = date(&["+W%V %G"]);
    assert!(
        week.contains(&format!("<th>{this_week}</th><th>Total</th>")),
        "{week}"
    );
    let year = server.page("/r/stats/?period=year");
    assert!(year.contains(&format!("<th>{}</th><th>Total</th>", date(&["+%Y"]))));
    let month = server.page("/r/stats/?period=m");
    assert!(month.contains(&format!("<th>{}</th><th>Total</th>", date(&["+%b %Y"]))));
    let sub = server.page("/r/stats/sub");
    assert!(sub.contains("<h2>Commits per author per week (path 'sub')</h2>"));
}

#[test]
fn stats_top_authors_and_others() {
    let site = &*SITE;
    let server = Server::start(&site.rc);
    let html = server.page("/r/stats/?period=y&ofs=2");
    let all = stats_totals(&server.page("/r/stats/?period=y&ofs=-1"));
    let shown = stats_totals(&html);
    assert_eq!(shown.len(), 3, "two authors and Others: {html}");
    let others = shown
        .iter()
        .find(|(name, _)| name.starts_with("Others ("))
        .expect("an Others row");
    assert_eq!(others.0, &format!("Others ({})", all.len() - 2));
    let top_two: u64 = shown
        .iter()
        .filter(|(n, _)| !n.starts_with("Others"))
        .map(|(_, c)| c)
        .sum();
    assert_eq!(top_two + others.1, all.values().sum::<u64>());
    let escaped = server.page("/r/stats/?period=y&ofs=-1");
    assert!(escaped.contains("<td class='left'>Eve &amp; Co</td>"));
}

#[test]
fn stats_markup_equals_cgit() {
    let server = Server::start(&SITE.rc);
    for url in [
        "/r/stats/",
        "/r/stats/?period=m&ofs=3",
        "/r/stats/?period=q&ofs=-1",
        "/r/stats/sub?period=y",
        "/r/stats/?period=y&ofs=2&h=side",
        "/m/stats/?ofs=25",
    ] {
        assert_like_cgit_by(&server, &SITE.rc, url, |html| {
            [
                ("<div class='cgit-panel'>", "</div> <!-- class=content -->"),
                ("<table class='tabs'>", "</td>"),
            ]
            .iter()
            .map(|(start, end)| as_cgit_panel(between(html, start, end)))
            .collect::<Vec<_>>()
            .join("\n[...]\n")
        });
    }
}

/// A stats panel with the differences that cgitd makes on purpose, for accessibility and valid
/// HTML, brought to one form (applied to cgit's and cgitd's page alike), so that everything else
/// is still compared byte for byte: cgitd's selects have `<label>`s (and ids for them), its
/// reload button is a real button rather than one inside `<noscript>` (keyboard users with
/// scripts on could not submit otherwise), and its empty cells are `<td></td>`, not the invalid
/// `<td/>`.
fn as_cgit_panel(html: &str) -> String {
    let mut out = html
        .replace("<td></td>", "<td/>")
        .replace("<td colspan='2'></td>", "<td colspan='2'/>")
        .replace(
            "<noscript><input type='submit' value='Reload'/></noscript>",
            "<input type='submit' value='Reload'/>",
        );
    for (id, label) in [("stats-period", "Period:"), ("stats-ofs", "Authors:")] {
        out = out
            .replace(&format!("<label for='{id}'>{label}</label>"), label)
            .replace(&format!(" id='{id}'"), "");
    }
    out
}

#[test]
fn stats_refuses_disabled_and_unknown_periods() {
    let site = &*SITE;
    let server = Server::start(&site.rc);
    let cases = [
        ("/off/stats/", 400, "Statistics type disabled: week"),
        (
            "/m/stats/?period=quarter",
            400,
            "Statistics type disabled: quarter",
        ),
        ("/m/stats/?period=y", 400, "Statistics type disabled: year"),
        ("/r/stats/?period=zz", 404, "Unknown statistics type: z"),
        ("/r/stats/?period=W", 404, "Unknown statistics type: W"),
        ("/r/stats/?period=%C3%A9", 404, "Unknown statistics type: é"),
    ];
    for (url, status, message) in cases {
        let r = server.get(url);
        assert_eq!(r.status, status, "{url}");
        assert!(r.text().contains(message), "{url}: {}", r.text());
    }
    for url in [
        "/r/stats/nope?period=y",
        "/r/stats/?ofs=-5",
        "/r/stats/?ofs=100000",
    ] {
        assert_eq!(server.get(url).status, 200, "{url}");
    }
    assert_eq!(server.get("/r/stats/?h=nope").status, 404);
    // the tab shows only where stats are enabled; the month repository offers two periods
    assert!(
        server
            .get("/r/")
            .text()
            .contains("<a href='/r/stats/'>stats</a>")
    );
    let off = server.page("/off/");
    assert!(off.contains("<a href='/off/log/'>log</a>") && !off.contains(">stats<"));
    let m = server.page("/m/stats/");
    assert!(m.contains("<option value='m'>month</option>"));
    assert!(!m.contains("quarter</option>"));
}
