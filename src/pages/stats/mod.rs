//! stats: commits per author per week, month, quarter or year over the four periods ending with
//! the current one, from `h` (optionally limited to a path), merges left out.

mod period;

use period::Period;

use super::parts::frame::{self, Frame};
use super::parts::shared;
use super::{PageError, RepoCtx, Response};
use crate::git::log::LogQuery;
use crate::git::{self, CommitInfo, GitError};
use askama::Template;
use gix::bstr::ByteSlice;
use std::collections::BTreeMap;

/// Columns of the table: this many periods, the last one the current.
const PERIODS_SHOWN: usize = 4;
/// Authors shown when the request does not say (`ofs`).
const DEFAULT_TOP: i64 = 10;
/// Commits counted at most.
const MAX_COMMITS: usize = 100_000;

/// One row: a name, commits per period, and their sum.
struct Row {
    name: String,
    counts: Vec<u64>,
    total: u64,
}

impl Row {
    fn new(name: String) -> Row {
        Row {
            name,
            counts: vec![0; PERIODS_SHOWN],
            total: 0,
        }
    }

    fn add(&mut self, other: &Row) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
    }
}

/// An `<option>`: value, label, selected.
type Choice = (String, &'static str, bool);

#[derive(Template)]
#[template(path = "stats.html")]
struct Stats {
    hidden: Vec<(&'static str, String)>,
    periods: Vec<Choice>,
    tops: Vec<Choice>,
    period: &'static str,
    path: Option<String>,
    labels: Vec<String>,
    rows: Vec<Row>,
    /// "Others (N)": the authors beyond the top, summed.
    others: Option<Row>,
    totals: Row,
    stopped_early: bool,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let max = ctx
        .state
        .config
        .opts
        .max_stats
        .as_deref()
        .and_then(Period::from_name);
    let period = requested_period(ctx.req.query.period.as_deref())?;
    if max.is_none_or(|max| period > max) {
        return Err(PageError::BadRequest(format!(
            "Statistics type disabled: {}",
            period.name()
        )));
    }
    let path = ctx.req.path.as_ref().map(|p| p.as_bstr());
    let now_number = period.number(ctx.now);
    let first = now_number - (PERIODS_SHOWN as i64 - 1);
    let (mut authors, stopped_early) = authors_kept(ctx, path, period, first)?;
    if stopped_early {
        ctx.site.cutoffs.inc();
    }
    let mut totals = Row::new("Total".into());
    for row in &authors {
        totals.add(row);
    }
    let top = match ctx.req.query.ofs {
        0 => DEFAULT_TOP,
        n => n,
    };
    let others = (top >= 0 && authors.len() > top as usize).then(|| {
        let rest = authors.split_off(top as usize);
        let mut others = Row::new(rest.len().to_string());
        for row in &rest {
            others.add(row);
        }
        others
    });
    let body = Stats {
        hidden: hidden_fields(ctx),
        periods: period::ALL
            .into_iter()
            .filter(|p| max.is_some_and(|max| *p <= max))
            .map(|p| (p.code().to_string(), p.name(), p == period))
            .collect(),
        tops: [
            ("10", "10"),
            ("25", "25"),
            ("50", "50"),
            ("100", "100"),
            ("-1", "all"),
        ]
        .into_iter()
        .map(|(value, label)| (value.to_string(), label, value == top.to_string()))
        .collect(),
        period: period.name(),
        path: path.map(|p| p.to_str_lossy().into_owned()),
        labels: (first..=now_number).map(|n| period.label(n)).collect(),
        rows: authors,
        others,
        totals,
        stopped_early,
    };
    let mut frame = Frame::repo(ctx, "stats");
    if let Some(p) = &ctx.req.path {
        frame.title = frame::page_title(ctx, "stats", Some(&shared::path_title(p)));
        frame.crumbs = shared::path_crumbs(p, |prefix| {
            ctx.links().page("stats", prefix, Some(&ctx.head), &[])
        });
    }
    let mut response = Response::html(frame::wrap(ctx.site, &frame, &body)?);
    if body.stopped_early {
        // A later walk may get further; caches must not keep the partial page.
        response.headers.push(("Cache-Control", "no-cache".into()));
    }
    Ok(response)
}

/// The period `period=` asks for (week when absent); cgit reads only its first character.
fn requested_period(value: Option<&str>) -> Result<Period, PageError> {
    let Some(code) = value.and_then(|v| v.chars().next()) else {
        return Ok(Period::Week);
    };
    Period::from_code(code)
        .ok_or_else(|| PageError::NotFound(format!("Unknown statistics type: {code}")))
}

/// Rows per author name (non-merge commits only, by committer date), most commits first, names
/// in byte order among equals.
/// The authors' rows for the periods from `first`, and whether the walk stopped at its budget.
/// A finished count is kept in the fragment cache by (tip, path, period, first period): a
/// repeat, through any fork, costs nothing until the period rolls over or the branch moves.
fn authors_kept(
    ctx: &RepoCtx<'_>,
    path: Option<&gix::bstr::BStr>,
    period: Period,
    first: i64,
) -> Result<(Vec<Row>, bool), PageError> {
    let tip = ctx.head_commit()?;
    let key = format!("stats:{tip}:{path:?}:{}:{first}", period.code());
    let count = || -> Result<(Vec<Row>, bool), GitError> {
        let page = git::log::query(
            ctx.repo,
            &LogQuery {
                tips: vec![tip],
                path,
                bloom: ctx.state.bloom(),
                commits: ctx.state.commit_index(&ctx.refs),
                since: Some(period.start(first)),
                count: MAX_COMMITS,
                visits: ctx.site.config.globals.walk_budget,
                ..LogQuery::default()
            },
        )?;
        Ok((
            count_by_author(&page.commits, period, first),
            page.stopped_early,
        ))
    };
    let mut partial = None;
    let kept = ctx.site.fragments.get_or_render(&key, || {
        let (rows, stopped_early) = count().map_err(Some)?;
        if stopped_early {
            partial = Some(rows);
            return Err(None::<GitError>);
        }
        Ok(rows
            .iter()
            .map(|r| {
                let counts: Vec<String> = r.counts.iter().map(u64::to_string).collect();
                format!("{}\t{}\n", counts.join("\t"), r.name)
            })
            .collect::<String>())
    });
    match kept {
        Ok(text) => Ok((text.lines().filter_map(decode_row).collect(), false)),
        Err(Some(e)) => Err(e.into()),
        Err(None) => Ok((partial.unwrap_or_default(), true)),
    }
}

/// A kept row: its counts, then the name (which may hold tabs).
fn decode_row(line: &str) -> Option<Row> {
    let mut fields = line.splitn(PERIODS_SHOWN + 1, '\t');
    let mut row = Row::new(String::new());
    for count in row.counts.iter_mut() {
        *count = fields.next()?.parse().ok()?;
    }
    row.name = fields.next()?.to_string();
    row.total = row.counts.iter().sum();
    Some(row)
}

fn count_by_author(commits: &[std::sync::Arc<CommitInfo>], period: Period, first: i64) -> Vec<Row> {
    let mut by_name: BTreeMap<&str, Row> = BTreeMap::new();
    for c in commits.iter().filter(|c| c.parents.len() <= 1) {
        let column = period.number(c.committer.time.seconds) - first;
        if !(0..PERIODS_SHOWN as i64).contains(&column) {
            continue;
        }
        let row = by_name
            .entry(&c.author.name)
            .or_insert_with(|| Row::new(c.author.name.clone()));
        row.counts[column as usize] += 1;
        row.total += 1;
    }
    let mut rows: Vec<Row> = by_name.into_values().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.total));
    rows
}

/// The form's hidden fields: `h` unless it is the default branch.
fn hidden_fields(ctx: &RepoCtx<'_>) -> Vec<(&'static str, String)> {
    let mut hidden = Vec::new();
    if ctx.head != ctx.defbranch {
        hidden.push(("h", ctx.head.clone()));
    }
    hidden
}
