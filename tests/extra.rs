//! blame and stats pages on small generated repositories: attribution equal to `git blame`,
//! counts equal to `git shortlog`, markup and labels equal to cgit's, error statuses.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DAY: i64 = 86_400;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Commits everything as `author` at unix time `when` (author and committer date).
fn commit_as(dir: &Path, author: &str, when: i64, message: &str) -> String {
    git(dir, &["add", "-A"]);
    let date = format!("@{when} +0000");
    let out = git_command(dir, &["commit", "-q", "--allow-empty", "-m", message])
        .env("GIT_AUTHOR_NAME", author)
        .env(
            "GIT_AUTHOR_EMAIL",
            format!("{}@example.com", author.replace(' ', ".")),
        )
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The part of a page between `start` and `end` (both included / excluded).
fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let from = html
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} not in {html}"));
    let to = from + html[from..].find(end).expect("end marker");
    &html[from..to]
}

struct Site {
    _dir: TempDir,
    rc: PathBuf,
    work: PathBuf,
}

/// Writes a cgitrc serving `repo` (a work tree) as `r` with `options`, and as `off` without.
fn site(dir: TempDir, work: PathBuf, options: &str) -> Site {
    let rc = dir.path().join("cgitrc");
    let git_dir = work.join(".git");
    let text = format!(
        "virtual-root=/\n\
         repo.url=r\nrepo.path={git}\n{options}\n\n\
         repo.url=off\nrepo.path={git}\n",
        git = git_dir.display()
    );
    std::fs::write(&rc, text).unwrap();
    Site {
        _dir: dir,
        rc,
        work,
    }
}

/// A file changed by several commits of several authors, a binary file, a directory.
fn blame_site() -> Site {
    let dir = TempDir::new("blame");
    let work = dir.path().join("work");
    init_repo(&work);
    let t = 1_700_000_000;
    write(&work, "src/lib.txt", "one\ntwo\nthree\nfour\nfive\nsix\n");
    write(&work, "data.bin", b"\x00\x01\x02binary\xff");
    commit_as(&work, "Ada", t, "first");
    write(
        &work,
        "src/lib.txt",
        "one\nTWO\nthree\nfour\n\t<script>x & y</script>\nsix\n",
    );
    commit_as(&work, "Bob", t + DAY, "second");
    write(
        &work,
        "src/lib.txt",
        "zero\none\nTWO\nthree\nFOUR\nFOUR and a half\n\t<script>x & y</script>\nsix\n",
    );
    commit_as(&work, "Cy", t + 2 * DAY, "third");
    write(&work, "src/other.txt", "unrelated\n");
    commit_as(&work, "Ada", t + 3 * DAY, "fourth <touches nothing blamed>");
    site(dir, work, "repo.enable-blame=1")
}

/// The commit of each line, from `git blame --porcelain`.
fn git_blame(work: &Path, path: &str) -> Vec<String> {
    let out = git(work, &["blame", "--porcelain", path]);
    out.lines()
        .filter(|l| {
            let first = l.split(' ').next().unwrap_or("");
            first.len() == 40 && first.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .map(|l| l[..40].to_string())
        .collect()
}

/// (commit, line count) per group of the blame table.
fn blame_groups(html: &str) -> Vec<(String, usize)> {
    let hashes = between(html, "<td class='hashes'>", "</td>");
    let numbers = between(html, "<td class='linenumbers'>", "</td>");
    let ids: Vec<String> = hashes
        .split("<span class='oid'>")
        .skip(1)
        .map(|g| between(g, "?id=", "'")[4..].to_string())
        .collect();
    let counts: Vec<usize> = numbers
        .split("<div class='alt'>")
        .skip(1)
        .map(|g| g.matches("<a id='n").count())
        .collect();
    assert_eq!(ids.len(), counts.len(), "{html}");
    ids.into_iter().zip(counts).collect()
}

#[test]
fn blame_attributes_lines_like_git_blame() {
    let site = blame_site();
    let server = Server::start(&site.rc);
    let response = server.get("/r/blame/src/lib.txt");
    assert_eq!(response.status, 200);
    let html = response.text();
    let groups = blame_groups(&html);
    let per_line: Vec<String> = groups
        .iter()
        .flat_map(|(id, n)| std::iter::repeat_n(id.clone(), *n))
        .collect();
    assert_eq!(per_line, git_blame(&site.work, "src/lib.txt"));
    for pair in groups.windows(2) {
        assert_ne!(
            pair[0].0, pair[1].0,
            "groups hold consecutive lines of one commit"
        );
    }
    assert!(groups.iter().any(|(_, n)| *n > 1));
    // line anchors run 1..=n, content is escaped
    for n in 1..=per_line.len() {
        assert!(html.contains(&format!("<a id='n{n}' href='#n{n}'>{n}</a>")));
    }
    assert!(html.contains("&lt;script&gt;x &amp; y&lt;/script&gt;"));
    assert!(!html.contains("<script>x"));
    assert!(html.contains("<a class='active' href='/r/blame/src/lib.txt'>blame</a>"));
    // an older revision blames its own lines
    let first = git(&site.work, &["rev-list", "--max-parents=0", "HEAD"]);
    let old = server.get(&format!("/r/blame/src/lib.txt?id={}", first.trim()));
    let old_groups = blame_groups(&old.text());
    assert_eq!(old_groups, vec![(first.trim().to_string(), 6)]);
    // the same page again comes from the cache and is the same
    assert_eq!(server.get("/r/blame/src/lib.txt").text().len(), html.len());
}

#[test]
fn blame_markup_equals_cgit() {
    let site = blame_site();
    let server = Server::start(&site.rc);
    for url in ["/r/blame/src/lib.txt", "/r/blame/src/lib.txt?id=HEAD~1"] {
        let Some(theirs) = cgit(&site.rc, url) else {
            return;
        };
        let ours = server.get(url).text();
        let start = "<div class='path'>";
        let end = "</div> <!-- class=content -->";
        assert_eq!(
            between(&ours, start, end),
            between(&theirs, start, end),
            "{url}"
        );
    }
}

#[test]
fn blame_refuses_binaries_folders_and_disabled_repositories() {
    let site = blame_site();
    let server = Server::start(&site.rc);
    let bin = server.get("/r/blame/data.bin");
    assert_eq!(bin.status, 200);
    assert!(
        bin.text()
            .contains("<div class='error'>blob is binary.</div>")
    );
    assert!(!bin.text().contains("class='blame blob'"));
    for url in ["/r/blame/src", "/r/blame/", "/r/blame"] {
        let r = server.get(url);
        assert_eq!(r.status, 404, "{url}");
        assert!(
            r.text().contains("Blame is not available for folders."),
            "{url}"
        );
    }
    assert_eq!(server.get("/r/blame/nope.txt").status, 404);
    assert_eq!(
        server.get("/r/blame/src/lib.txt?id=nonexistent").status,
        404
    );
    assert_eq!(server.get("/r/blame/src/lib.txt?id=--output=x").status, 400);
    let off = server.get("/off/blame/src/lib.txt");
    assert_eq!(off.status, 403);
    assert!(off.text().contains("Blame is disabled"));
    // blame buttons and links only where it is enabled
    let tree = server.get("/r/tree/src").text();
    assert!(tree.contains("<a class='button' href='/r/blame/src/lib.txt'>blame</a>"));
    let blob = server.get("/r/tree/src/lib.txt").text();
    assert!(blob.contains("(<a href='/r/blame/src/lib.txt'>blame</a>)"));
    assert!(!server.get("/off/tree/src").text().contains(">blame<"));
}

/// Authors committing just before midnight on days before now, a merge and an old root commit;
/// `r` has `max-stats=year`, `m` has `max-stats=month`, `off` has none.
fn stats_site() -> Site {
    let dir = TempDir::new("stats");
    let work = dir.path().join("work");
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
    let merge_date = format!("@{} +0000", now - 60);
    let out = git_command(
        &work,
        &["merge", "-q", "--no-ff", "-m", "merge side", "side"],
    )
    .env("GIT_AUTHOR_NAME", "Merger")
    .env("GIT_AUTHOR_DATE", &merge_date)
    .env("GIT_COMMITTER_DATE", &merge_date)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = site(dir, work, "repo.max-stats=year");
    let extra = format!(
        "\nrepo.url=m\nrepo.path={}/.git\nrepo.max-stats=month\n",
        s.work.display()
    );
    let mut text = std::fs::read_to_string(&s.rc).unwrap();
    text.push_str(&extra);
    std::fs::write(&s.rc, text).unwrap();
    s
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
    let site = stats_site();
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
    let week = server.get("/r/stats/").text();
    let this_week = date(&["+W%V %G"]);
    assert!(
        week.contains(&format!("<th>{this_week}</th><th>Total</th>")),
        "{week}"
    );
    let year = server.get("/r/stats/?period=year").text();
    assert!(year.contains(&format!("<th>{}</th><th>Total</th>", date(&["+%Y"]))));
    let month = server.get("/r/stats/?period=m").text();
    assert!(month.contains(&format!("<th>{}</th><th>Total</th>", date(&["+%b %Y"]))));
    let sub = server.get("/r/stats/sub").text();
    assert!(sub.contains("<h2>Commits per author per week (path 'sub')</h2>"));
}

#[test]
fn stats_top_authors_and_others() {
    let site = stats_site();
    let server = Server::start(&site.rc);
    let html = server.get("/r/stats/?period=y&ofs=2").text();
    let all = stats_totals(&server.get("/r/stats/?period=y&ofs=-1").text());
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
    let escaped = server.get("/r/stats/?period=y&ofs=-1").text();
    assert!(escaped.contains("<td class='left'>Eve &amp; Co</td>"));
}

#[test]
fn stats_markup_equals_cgit() {
    let site = stats_site();
    let server = Server::start(&site.rc);
    for url in [
        "/r/stats/",
        "/r/stats/?period=m&ofs=3",
        "/r/stats/?period=q&ofs=-1",
        "/r/stats/sub?period=y",
        "/r/stats/?period=y&ofs=2&h=side",
        "/m/stats/?ofs=25",
    ] {
        let Some(theirs) = cgit(&site.rc, url) else {
            return;
        };
        let ours = server.get(url).text();
        let start = "<div class='cgit-panel'>";
        let end = "</div> <!-- class=content -->";
        assert_eq!(
            between(&ours, start, end),
            between(&theirs, start, end),
            "{url}"
        );
        let tabs = "<table class='tabs'>";
        assert_eq!(
            between(&ours, tabs, "</td>"),
            between(&theirs, tabs, "</td>"),
            "{url}"
        );
    }
}

#[test]
fn stats_refuses_disabled_and_unknown_periods() {
    let site = stats_site();
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
    assert!(!server.get("/off/").text().contains(">stats<"));
    let m = server.get("/m/stats/").text();
    assert!(m.contains("<option value='m'>month</option>"));
    assert!(!m.contains("quarter</option>"));
}
