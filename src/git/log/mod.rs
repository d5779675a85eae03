//! History walks: plain, searched, ranged and path-limited logs.

mod path_walk;
mod search;

pub use search::{Field, Filter};

use path_walk::{PathWalk, rewritten_path_query};

use super::Repo;
use super::commit::{CommitInfo, read_commit};
use super::commit_graph::BloomFilters;
use super::commit_index::CommitIndex;
use super::error::GitError;
use gix::ObjectId;
use gix::bstr::BStr;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;
use gix::traverse::commit::topo;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Commits a searching or path-limited walk may look at before it gives up.
const MAX_VISITS: usize = 200_000;
/// Wall-clock budget of one walk.
const MAX_WALK_TIME: Duration = Duration::from_secs(4);

/// One page of history.
#[derive(Default)]
pub struct LogPage {
    pub commits: Vec<Arc<CommitInfo>>,
    /// Whether another commit follows the page.
    pub has_more: bool,
    /// The walk hit its time or visit budget: later matches may exist.
    pub stopped_early: bool,
    /// When it stopped early: the last commit it looked at, where a walk can go on from.
    pub resume_from: Option<ObjectId>,
}

/// Commit ids of a history walk (in walk order), kept so that deeper pages of the same walk
/// continue from what earlier pages found instead of starting over.
#[derive(Debug, Default)]
pub struct WalkIds {
    pub ids: Vec<ObjectId>,
    /// The walk reached the end of history.
    pub complete: bool,
}

/// A memory of earlier walks that a log query may use and fill: the ids each walk found, by a
/// key that describes the walk (tips, exclusions, path, order). The caller decides how much
/// is kept and for how long.
pub trait WalkMemo: std::fmt::Debug + Send + Sync {
    /// The ids remembered for the walk `key`, if any.
    fn get(&self, key: &str) -> Option<Arc<WalkIds>>;
    /// Remembers the ids a walk found (as far as it went).
    fn put(&self, key: String, walk: Arc<WalkIds>);
}

/// The order commits are listed in (cgit's `commit-sort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// git's default: newest commit date first.
    #[default]
    Default,
    /// `--date-order`: no parent before its children, else by date.
    Date,
    /// `--topo-order`: no parent before its children, lines of history kept together.
    Topo,
}

/// What to list.
#[derive(Clone, Debug, Default)]
pub struct LogQuery<'a> {
    pub tips: Vec<ObjectId>,
    /// Commits whose ancestry is excluded (`^rev`, `a..b`).
    pub hidden: Vec<ObjectId>,
    pub path: Option<&'a BStr>,
    /// Follow the path across renames (`git log --follow`).
    pub follow: bool,
    /// The commit-graph's changed-path filters, to skip tree reads in path walks.
    pub bloom: Option<Arc<BloomFilters>>,
    /// The commits of the object database, to walk history without reading commits.
    pub commits: Option<Arc<CommitIndex>>,
    /// Where unfiltered walks are remembered for deeper pages.
    pub walks: Option<&'a dyn WalkMemo>,
    pub filter: Option<Filter>,
    pub order: Order,
    /// Commits older than this (committer time) are not listed, nor is their ancestry walked
    /// (git's `--since`).
    pub since: Option<i64>,
    pub skip: usize,
    pub count: usize,
    /// Commits a searching or path-limited walk may look at (0: [`MAX_VISITS`]).
    pub visits: usize,
    /// For a graph of a path's history (`git log --graph -- path`): the simplified history
    /// in topological order, each commit's parents rewritten to its nearest listed ancestors.
    pub rewrite_parents: bool,
}

/// `count` commits from `tip` after skipping `skip`, newest first (git log's default order).
pub fn log(repo: &Repo, tip: ObjectId, skip: usize, count: usize) -> Result<LogPage, GitError> {
    query(
        repo,
        &LogQuery {
            tips: vec![tip],
            skip,
            count,
            ..LogQuery::default()
        },
    )
}

/// `count` commits from `tip` that change `path`, after skipping `skip`, with git's default
/// history simplification.
pub fn path_log(
    repo: &Repo,
    bloom: Option<Arc<BloomFilters>>,
    tip: ObjectId,
    path: &BStr,
    skip: usize,
    count: usize,
) -> Result<LogPage, GitError> {
    query(
        repo,
        &LogQuery {
            tips: vec![tip],
            path: Some(path),
            bloom,
            skip,
            count,
            ..LogQuery::default()
        },
    )
}

/// Runs a log query within the walk budget.
pub fn query(repo: &Repo, q: &LogQuery<'_>) -> Result<LogPage, GitError> {
    if let (true, Some(path), false) = (q.rewrite_parents, q.path, q.follow)
        && super::tree::components(path).next().is_some()
    {
        return rewritten_path_query(repo, q, path);
    }
    if let (Some(walks), None) = (q.walks, &q.filter) {
        return cached_query(repo, q, walks);
    }
    let mut budget = Budget::new(q.visits);
    let mut page = Collector::new(q);
    for_each_id(repo, q, &mut budget, |id| page.offer(repo, id))?;
    page.stopped_early = budget.exhausted;
    Ok(page.finish())
}

/// An unfiltered query answered from the ids of an earlier walk when it reached far enough;
/// otherwise the walk is redone to twice the depth, so paging through history costs O(depth)
/// in total rather than per page.
fn cached_query(repo: &Repo, q: &LogQuery<'_>, walks: &dyn WalkMemo) -> Result<LogPage, GitError> {
    let key = format!(
        "{:?} {:?} {:?} {} {:?} {:?}",
        q.tips, q.hidden, q.path, q.follow, q.order, q.since
    );
    let need = q.skip + q.count + 1;
    let known = walks.get(&key);
    let walk = match known {
        Some(w) if w.complete || w.ids.len() >= need => w,
        previous => {
            let target = need.max(previous.map_or(0, |w| w.ids.len() * 2));
            let mut budget = Budget::new(q.visits);
            let mut ids = Vec::with_capacity(target.min(MAX_VISITS));
            for_each_id(repo, q, &mut budget, |id| {
                ids.push(id);
                Ok(ids.len() >= target)
            })?;
            let complete = ids.len() < target && !budget.exhausted;
            let walk = Arc::new(WalkIds { ids, complete });
            if !budget.exhausted {
                walks.put(key, Arc::clone(&walk));
            }
            walk
        }
    };
    let end = walk.ids.len().min(q.skip + q.count);
    let commits = walk.ids[q.skip.min(end)..end]
        .iter()
        .map(|id| read_commit(repo, *id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LogPage {
        commits,
        has_more: walk.ids.len() > q.skip + q.count,
        stopped_early: !walk.complete && walk.ids.len() < need,
        resume_from: None,
    })
}

/// Whether `ancestor` is `of` or one of its ancestors: from the commit index when it holds
/// both, else by a merge base.
pub fn is_ancestor(
    repo: &Repo,
    commits: Option<&CommitIndex>,
    ancestor: ObjectId,
    of: ObjectId,
) -> Result<bool, GitError> {
    if ancestor == of {
        return Ok(true);
    }
    if let Some(known) = commits.and_then(|index| index.is_ancestor(&ancestor, &of)) {
        return Ok(known);
    }
    let base = repo.merge_base(ancestor, of).map_err(GitError::internal)?;
    Ok(base.is_some_and(|b| b.detach() == ancestor))
}

/// Feeds the ids the query selects (before filtering and paging), in order, to `sink` until it
/// returns true, the history ends or the budget runs out.
fn for_each_id(
    repo: &Repo,
    q: &LogQuery<'_>,
    budget: &mut Budget,
    mut sink: impl FnMut(ObjectId) -> Result<bool, GitError>,
) -> Result<(), GitError> {
    match q
        .path
        .filter(|p| super::tree::components(p).next().is_some())
    {
        None => {
            for id in ids(repo, q, q.order, q.since)? {
                if !budget.spend() || sink(id?)? {
                    break;
                }
            }
        }
        Some(path) => {
            let allowed = if q.hidden.is_empty() {
                None
            } else {
                Some(reachable(repo, q, budget)?)
            };
            let mut walk = PathWalk::new(repo, path, q.bloom.as_deref(), allowed, q.since);
            walk.commits = q.commits.as_deref();
            walk.follow = q.follow;
            for tip in &q.tips {
                walk.push(*tip)?;
            }
            while let Some(id) = walk.next_changing(budget)? {
                if sink(id)? {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Commits reachable from the tips but not from the hidden commits (for ranges with a path).
fn reachable(
    repo: &Repo,
    q: &LogQuery<'_>,
    budget: &mut Budget,
) -> Result<HashSet<ObjectId>, GitError> {
    let mut set = HashSet::new();
    for id in ids(repo, q, Order::Default, q.since)? {
        if !budget.spend() {
            break;
        }
        set.insert(id?);
    }
    Ok(set)
}

/// Commit ids from the tips, minus the ancestry of `hidden`, in `order`; in the default order
/// the walk stops at commits older than `since`. A plain newest-first walk goes over the commit
/// index when it holds the tips.
fn ids<'r>(
    repo: &'r Repo<'r>,
    q: &LogQuery<'_>,
    order: Order,
    since: Option<i64>,
) -> Result<Box<dyn Iterator<Item = Result<ObjectId, GitError>> + 'r>, GitError> {
    let (tips, hidden) = (&q.tips, &q.hidden);
    if let (Order::Default, true, Some(index)) = (order, hidden.is_empty(), q.commits.as_ref())
        && let Some(mut walk) = index.newest_first(tips, since)
    {
        return Ok(Box::new(std::iter::from_fn(move || {
            let pos = walk.next()?;
            Some(Ok(walk.index().id(pos).to_owned()))
        })));
    }
    let sorting = match order {
        Order::Default => {
            let order = CommitTimeOrder::NewestFirst;
            let walk = repo
                .rev_walk(tips.iter().copied())
                .sorting(match since {
                    Some(seconds) => Sorting::ByCommitTimeCutoff { order, seconds },
                    None => Sorting::ByCommitTime(order),
                })
                .with_hidden(hidden.iter().copied())
                .all()
                .map_err(GitError::internal)?;
            return Ok(Box::new(
                walk.map(|info| info.map(|i| i.id).map_err(GitError::internal)),
            ));
        }
        Order::Date => topo::Sorting::DateOrder,
        Order::Topo => topo::Sorting::TopoOrder,
    };
    let walk =
        topo::Builder::from_iters(&repo.objects, tips.iter().copied(), Some(hidden.to_vec()))
            .sorting(sorting)
            .with_commit_graph(repo.commit_graph_if_enabled().ok().flatten())
            .build()
            .map_err(GitError::internal)?;
    Ok(Box::new(walk.map(|info| {
        info.map(|i| i.id).map_err(GitError::internal)
    })))
}

/// Limits on how much history one request may look at.
struct Budget {
    visits: usize,
    deadline: Instant,
    exhausted: bool,
}

impl Budget {
    /// A budget of `visits` commits (0: [`MAX_VISITS`]) and [`MAX_WALK_TIME`].
    fn new(visits: usize) -> Budget {
        Budget {
            visits: if visits == 0 { MAX_VISITS } else { visits },
            deadline: Instant::now() + MAX_WALK_TIME,
            exhausted: false,
        }
    }

    /// Takes one visit; false once the budget is gone.
    fn spend(&mut self) -> bool {
        if self.visits == 0 || (self.visits.is_multiple_of(256) && Instant::now() > self.deadline) {
            self.exhausted = true;
            self.visits = 0;
            return false;
        }
        self.visits -= 1;
        true
    }
}

/// Applies the filter, the offset and the page size to a stream of commits.
struct Collector<'q> {
    filter: Option<&'q Filter>,
    since: Option<i64>,
    skip: usize,
    count: usize,
    commits: Vec<Arc<CommitInfo>>,
    has_more: bool,
    stopped_early: bool,
    last_offered: Option<ObjectId>,
}

impl<'q> Collector<'q> {
    fn new(q: &'q LogQuery<'_>) -> Collector<'q> {
        Collector {
            filter: q.filter.as_ref(),
            since: q.since,
            skip: q.skip,
            count: q.count,
            commits: Vec::with_capacity(q.count.min(1000)),
            has_more: false,
            stopped_early: false,
            last_offered: None,
        }
    }

    /// Takes a candidate; true when the page is full and one more match was seen.
    fn offer(&mut self, repo: &Repo, id: ObjectId) -> Result<bool, GitError> {
        self.offer_commit(repo, id, None)
    }

    /// Takes a candidate listed with rewritten parents.
    fn offer_with_parents(
        &mut self,
        repo: &Repo,
        id: ObjectId,
        parents: Vec<ObjectId>,
    ) -> Result<bool, GitError> {
        self.offer_commit(repo, id, Some(parents))
    }

    fn offer_commit(
        &mut self,
        repo: &Repo,
        id: ObjectId,
        parents: Option<Vec<ObjectId>>,
    ) -> Result<bool, GitError> {
        self.last_offered = Some(id);
        if self.filter.is_none() && self.since.is_none() && self.skip > 0 {
            self.skip -= 1;
            return Ok(false);
        }
        let mut info = read_commit(repo, id)?;
        if let Some(parents) = parents {
            Arc::make_mut(&mut info).parents = parents;
        }
        let too_old = self.since.is_some_and(|s| info.committer.time.seconds < s);
        if too_old || self.filter.is_some_and(|f| !f.matches(&info)) {
            return Ok(false);
        }
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(false);
        }
        if self.commits.len() == self.count {
            self.has_more = true;
            return Ok(true);
        }
        self.commits.push(info);
        Ok(false)
    }

    fn finish(self) -> LogPage {
        let stopped_early = self.stopped_early && !self.has_more;
        LogPage {
            commits: self.commits,
            has_more: self.has_more,
            stopped_early,
            resume_from: self.last_offered.filter(|_| stopped_early),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_run_out() {
        let mut budget = Budget {
            visits: 2,
            deadline: Instant::now() + Duration::from_secs(60),
            exhausted: false,
        };
        assert!(budget.spend() && budget.spend());
        assert!(!budget.spend());
        assert!(budget.exhausted);
    }
}
