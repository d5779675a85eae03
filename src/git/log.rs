//! History walks: plain, searched, ranged and path-limited logs.

use super::Repo;
use super::commit::{CommitInfo, Person, read_commit};
use super::commit_graph::BloomFilters;
use super::commit_index::CommitIndex;
use super::error::GitError;
use super::tree::entry_at;
use gix::ObjectId;
use gix::bstr::{BStr, BString};
use gix::objs::tree::EntryMode;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;
use gix::traverse::commit::topo;
use std::collections::{BinaryHeap, HashMap, HashSet};
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

/// What a search looks at (cgit's `qt=grep|author|committer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Any line of the message.
    Message,
    /// `Name <email>` of the author.
    Author,
    /// `Name <email>` of the committer.
    Committer,
}

/// A search as cgit asks git for it (`--grep`/`--author`/`--committer` with
/// `--regexp-ignore-case`): a POSIX basic regular expression, case-insensitive, `^` and `$`
/// anchoring lines.
#[derive(Clone, Debug)]
pub struct Filter {
    field: Field,
    pattern: regex::Regex,
}

impl Filter {
    /// The search, or why the pattern cannot be searched for (invalid, or a back-reference,
    /// which the regex engine does not do).
    pub fn new(field: Field, pattern: &str) -> Result<Filter, String> {
        let invalid = || format!("Invalid search pattern: {pattern}");
        let translated = basic_to_regex(pattern).ok_or_else(invalid)?;
        let pattern = regex::RegexBuilder::new(&translated)
            .case_insensitive(true)
            .multi_line(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|_| invalid())?;
        Ok(Filter { field, pattern })
    }

    /// Whether the commit is one the search finds.
    pub fn matches(&self, c: &CommitInfo) -> bool {
        let person = |p: &Person| self.pattern.is_match(&format!("{} <{}>", p.name, p.email));
        match self.field {
            Field::Message => self.pattern.is_match(&c.message),
            Field::Author => person(&c.author),
            Field::Committer => person(&c.committer),
        }
    }
}

/// A POSIX basic regular expression (with GNU's `\+ \? \|` and `\< \>`) in the `regex`
/// crate's syntax; `None` for what it cannot express (back-references).
fn basic_to_regex(basic: &str) -> Option<String> {
    let mut out = String::with_capacity(basic.len() + 8);
    let mut chars = basic.chars().peekable();
    // Where a `*` is literal: at the start, after `^` or after an opening group.
    let mut at_start = true;
    while let Some(c) = chars.next() {
        let starting = at_start;
        at_start = false;
        match c {
            '\\' => match chars.next()? {
                g @ ('(' | '|') => {
                    out.push(g);
                    at_start = true;
                }
                g @ (')' | '{' | '}' | '+' | '?') => out.push(g),
                '<' | '>' => out.push_str("\\b"),
                d if d.is_ascii_digit() => return None,
                e if e.is_ascii_alphanumeric() => {
                    out.push('\\');
                    out.push(e);
                }
                other => out.push_str(&regex::escape(&other.to_string())),
            },
            '*' if starting => out.push_str("\\*"),
            '^' => {
                out.push('^');
                at_start = true;
            }
            '[' => copy_bracket(&mut chars, &mut out)?,
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Copies a bracket expression (after its `[`): a `]` right at its start is a member, and a
/// backslash is a plain character, as POSIX has it.
fn copy_bracket(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
) -> Option<()> {
    out.push('[');
    if chars.peek() == Some(&'^') {
        out.push(chars.next()?);
    }
    let mut first = true;
    loop {
        let c = chars.next()?;
        match c {
            ']' if !first => break,
            '[' if chars.peek() == Some(&':') => {
                out.push('[');
                for class_char in chars.by_ref() {
                    out.push(class_char);
                    if class_char == ']' {
                        break;
                    }
                }
            }
            '\\' | '[' | ']' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
        first = false;
    }
    out.push(']');
    Some(())
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

/// A commit as a path walk decided about it: whether it is listed, and the parents its
/// simplified history goes on to.
struct Walked {
    id: ObjectId,
    /// Committer time.
    time: u64,
    shown: bool,
    parents: Vec<ObjectId>,
}

/// A path-limited query for a graph: the whole simplified history walked (within the budget),
/// sorted as `git log --graph` sorts it, with parents rewritten past the commits not listed.
fn rewritten_path_query(repo: &Repo, q: &LogQuery<'_>, path: &BStr) -> Result<LogPage, GitError> {
    let mut budget = Budget::new(q.visits);
    let allowed = if q.hidden.is_empty() {
        None
    } else {
        Some(reachable(repo, q, &mut budget)?)
    };
    let mut walk = PathWalk::new(repo, path, q.bloom.as_deref(), allowed, q.since);
    walk.commits = q.commits.as_deref();
    walk.record = Some(Vec::new());
    for tip in &q.tips {
        walk.push(*tip)?;
    }
    while walk.next_changing(&mut budget)?.is_some() {}
    let walked = walk.record.take().unwrap_or_default();
    let index: HashMap<ObjectId, usize> =
        walked.iter().enumerate().map(|(i, w)| (w.id, i)).collect();
    let mut page = Collector::new(q);
    for i in topological(&walked, &index, q.order == Order::Date) {
        if !walked[i].shown {
            continue;
        }
        let mut parents = Vec::new();
        for p in &walked[i].parents {
            if let Some(p) = nearest_shown(&walked, &index, *p)
                && !parents.contains(&p)
            {
                parents.push(p);
            }
        }
        if page.offer_with_parents(repo, walked[i].id, parents)? {
            break;
        }
    }
    page.stopped_early = budget.exhausted;
    Ok(page.finish())
}

/// The listed commit a parent link leads to: the parent itself, or the first listed commit
/// down the (first) parents of the unlisted ones; `None` where the line ends unlisted.
fn nearest_shown(
    walked: &[Walked],
    index: &HashMap<ObjectId, usize>,
    mut id: ObjectId,
) -> Option<ObjectId> {
    // each step goes to an older commit, so this ends
    loop {
        let w = &walked[*index.get(&id)?];
        if w.shown {
            return Some(id);
        }
        id = *w.parents.first()?;
    }
}

/// git's topological sort of a walked list (in walk order): a commit only after all its
/// children; of the commits ready, the newest (`by_date`, first made ready first among equal
/// times) or else the one made ready last, tips in walk order.
fn topological(walked: &[Walked], index: &HashMap<ObjectId, usize>, by_date: bool) -> Vec<usize> {
    // 1 + the children in the list not yet output; 0 once output
    let mut indegree = vec![1usize; walked.len()];
    for w in walked {
        for p in &w.parents {
            if let Some(&j) = index.get(p) {
                indegree[j] += 1;
            }
        }
    }
    let mut ready = Ready {
        by_date,
        stack: Vec::new(),
        heap: BinaryHeap::new(),
        seq: 0,
    };
    let tips: Vec<usize> = (0..walked.len()).filter(|i| indegree[*i] == 1).collect();
    if by_date {
        for i in tips {
            ready.put(walked, i);
        }
    } else {
        ready.stack = tips.into_iter().rev().collect();
    }
    let mut out = Vec::with_capacity(walked.len());
    while let Some(i) = ready.get() {
        for p in &walked[i].parents {
            let Some(&j) = index.get(p) else { continue };
            if indegree[j] == 0 {
                continue;
            }
            indegree[j] -= 1;
            if indegree[j] == 1 {
                ready.put(walked, j);
            }
        }
        indegree[i] = 0;
        out.push(i);
    }
    out
}

/// The commits ready to be listed in a topological sort: a stack, or newest first.
struct Ready {
    by_date: bool,
    stack: Vec<usize>,
    heap: BinaryHeap<(u64, std::cmp::Reverse<u64>, usize)>,
    seq: u64,
}

impl Ready {
    fn put(&mut self, walked: &[Walked], i: usize) {
        if self.by_date {
            self.seq += 1;
            self.heap
                .push((walked[i].time, std::cmp::Reverse(self.seq), i));
        } else {
            self.stack.push(i);
        }
    }

    fn get(&mut self) -> Option<usize> {
        if self.by_date {
            self.heap.pop().map(|(_, _, i)| i)
        } else {
            self.stack.pop()
        }
    }
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

/// What a path walk needs of a commit.
struct Node {
    time: u64,
    tree: ObjectId,
    parents: Vec<ObjectId>,
}

/// The path's entry in a commit's tree: `None` when the path does not exist there.
type PathEntry = Option<(ObjectId, EntryMode)>;

/// A newest-first walk that yields the commits changing one path, simplifying history like
/// git's default: a commit TREESAME to a parent is not shown, and a merge TREESAME to one of
/// its parents follows only that parent.
struct PathWalk<'r> {
    repo: &'r Repo<'r>,
    /// The path looked at now (an older name after a followed rename).
    path: BString,
    follow: bool,
    bloom: Option<&'r BloomFilters>,
    graph: Option<gix::commitgraph::Graph>,
    commits: Option<&'r CommitIndex>,
    allowed: Option<HashSet<ObjectId>>,
    /// Commits older than this are not walked.
    since: Option<i64>,
    queue: BinaryHeap<Queued>,
    seen: HashSet<ObjectId>,
    nodes: HashMap<ObjectId, Node>,
    entries: HashMap<ObjectId, PathEntry>,
    seq: u64,
    /// Where set, every commit taken from the queue with what was decided about it.
    record: Option<Vec<Walked>>,
}

/// Queue order: newest commit first, then first queued first (like git's date queue).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    time: u64,
    seq: std::cmp::Reverse<u64>,
    id: ObjectId,
}

impl<'r> PathWalk<'r> {
    fn new(
        repo: &'r Repo<'r>,
        path: &BStr,
        bloom: Option<&'r BloomFilters>,
        allowed: Option<HashSet<ObjectId>>,
        since: Option<i64>,
    ) -> PathWalk<'r> {
        PathWalk {
            repo,
            path: path.to_owned(),
            follow: false,
            bloom,
            graph: repo.commit_graph_if_enabled().ok().flatten(),
            commits: None,
            allowed,
            since,
            queue: BinaryHeap::new(),
            seen: HashSet::new(),
            nodes: HashMap::new(),
            entries: HashMap::new(),
            seq: 0,
            record: None,
        }
    }

    fn push(&mut self, id: ObjectId) -> Result<(), GitError> {
        if !self.is_allowed(&id) || !self.seen.insert(id) {
            return Ok(());
        }
        let time = self.node(id)?.time;
        if self.since.is_some_and(|s| (time as i64) < s) {
            return Ok(());
        }
        self.seq += 1;
        self.queue.push(Queued {
            time,
            seq: std::cmp::Reverse(self.seq),
            id,
        });
        Ok(())
    }

    /// The next commit that changes the path; `None` at the end of history or of the budget.
    fn next_changing(&mut self, budget: &mut Budget) -> Result<Option<ObjectId>, GitError> {
        while let Some(Queued { id, .. }) = self.queue.pop() {
            if !budget.spend() {
                return Ok(None);
            }
            let node = self
                .nodes
                .remove(&id)
                .map_or_else(|| self.read_node(id), Ok)?;
            if self.unchanged_from_first_parent(id, &node) {
                self.entries.remove(&id);
                self.push(node.parents[0])?;
                self.note(id, node.time, false, vec![node.parents[0]]);
                continue;
            }
            let own = self.entry(id, node.tree)?;
            self.entries.remove(&id);
            // Parents outside the range are compared but never followed (git's UNINTERESTING).
            let mut treesame_parent = None;
            let mut treesame_outside = false;
            for parent in &node.parents {
                if self.treesame(own, *parent)? {
                    if self.is_allowed(parent) {
                        treesame_parent = Some(*parent);
                        break;
                    }
                    treesame_outside = true;
                }
            }
            match treesame_parent {
                Some(parent) => {
                    self.push(parent)?;
                    self.note(id, node.time, false, vec![parent]);
                }
                None => {
                    // `push` leaves out parents outside the range
                    for parent in node.parents.iter().copied() {
                        self.push(parent)?;
                    }
                    let root_without_path = node.parents.is_empty() && own.is_none();
                    let none_inside = !node.parents.iter().any(|p| self.is_allowed(p));
                    let same_as_outside_only = none_inside && treesame_outside;
                    let inside: Vec<ObjectId> = node
                        .parents
                        .iter()
                        .copied()
                        .filter(|p| self.is_allowed(p))
                        .collect();
                    let shown = !(root_without_path || same_as_outside_only);
                    self.note(id, node.time, shown, inside);
                    if !shown {
                        continue;
                    }
                    if let (true, [parent]) = (self.follow, &node.parents[..]) {
                        self.follow_rename(*parent, node.tree, own)?;
                    }
                    return Ok(Some(id));
                }
            }
        }
        Ok(None)
    }

    fn note(&mut self, id: ObjectId, time: u64, shown: bool, parents: Vec<ObjectId>) {
        if let Some(record) = &mut self.record {
            record.push(Walked {
                id,
                time,
                shown,
                parents,
            });
        }
    }

    /// Whether the commit-graph's Bloom filter says for certain that the path is the same in
    /// `id` and its first parent — then the commit is TREESAME to it and no tree is read.
    fn unchanged_from_first_parent(&self, id: ObjectId, node: &Node) -> bool {
        let Some(first) = node.parents.first() else {
            return false;
        };
        let allowed = self.is_allowed(first);
        allowed
            && self
                .bloom
                .and_then(|b| b.maybe_changed(id.as_bytes(), self.path.as_ref()))
                == Some(false)
    }

    /// When the path appears in a commit as a rename, goes on with its old name (as `git log
    /// --follow` does, with git's rename detection over the whole commit).
    fn follow_rename(
        &mut self,
        parent: ObjectId,
        tree: ObjectId,
        own: PathEntry,
    ) -> Result<(), GitError> {
        let parent_tree = self.node(parent)?.tree;
        if own.is_none() || self.entry(parent, parent_tree)?.is_some() {
            return Ok(());
        }
        if let Some(old) = super::diff::renamed_from(self.repo, parent_tree, tree, &self.path)? {
            self.path = old;
            // entries were looked up for the newer name
            self.entries.clear();
        }
        Ok(())
    }

    fn is_allowed(&self, id: &ObjectId) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(id))
    }

    /// Whether the path is the same in `parent` as `own` (the child's entry).
    fn treesame(&mut self, own: PathEntry, parent: ObjectId) -> Result<bool, GitError> {
        let tree = self.node(parent)?.tree;
        Ok(self.entry(parent, tree)? == own)
    }

    /// The path's entry in commit `id` with root tree `tree`, cached until the commit is shown.
    fn entry(&mut self, id: ObjectId, tree: ObjectId) -> Result<PathEntry, GitError> {
        if let Some(e) = self.entries.get(&id) {
            return Ok(*e);
        }
        let e = entry_at(self.repo, tree, self.path.as_ref())?;
        self.entries.insert(id, e);
        Ok(e)
    }

    fn node(&mut self, id: ObjectId) -> Result<&Node, GitError> {
        if !self.nodes.contains_key(&id) {
            let node = self.read_node(id)?;
            self.nodes.insert(id, node);
        }
        Ok(&self.nodes[&id])
    }

    /// Parents, tree and date of a commit: from the commit index or the commit-graph when
    /// they have the commit.
    fn read_node(&mut self, id: ObjectId) -> Result<Node, GitError> {
        if let Some(index) = self.commits
            && let Some(pos) = index.position(&id)
        {
            return Ok(Node {
                time: index.time(pos).max(0) as u64,
                tree: index.tree(pos).to_owned(),
                parents: index.parents(pos).map(|p| index.id(p).to_owned()).collect(),
            });
        }
        if let Some(graph) = &self.graph
            && let Some(c) = graph.commit_by_id(id)
        {
            let parents = c
                .iter_parents()
                .map(|p| p.map(|pos| graph.id_at(pos).to_owned()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(GitError::internal)?;
            return Ok(Node {
                time: c.committer_timestamp(),
                tree: c.root_tree_id().to_owned(),
                parents,
            });
        }
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|_| GitError::NotFound(format!("Bad commit: {id}")))?;
        let c = commit.decode().map_err(GitError::internal)?;
        let time = c
            .committer()
            .ok()
            .and_then(|s| s.time().ok())
            .map_or(0, |t| t.seconds);
        Ok(Node {
            time: time.max(0) as u64,
            tree: c.tree(),
            parents: c.parents().collect(),
        })
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

    #[test]
    fn filters_ignore_case() {
        let person = |name: &str| Person {
            name: name.into(),
            email: "x@example.com".into(),
            time: gix::date::Time::default(),
        };
        let c = CommitInfo {
            id: ObjectId::null(gix::hash::Kind::Sha1),
            tree: ObjectId::null(gix::hash::Kind::Sha1),
            parents: Vec::new(),
            author: person("Ada Lovelace"),
            committer: person("Bob"),
            subject: "Fix Parser".into(),
            message: "Fix Parser\n\nDetails".into(),
        };
        let matches = |field, pattern| Filter::new(field, pattern).unwrap().matches(&c);
        assert!(matches(Field::Message, "details"));
        assert!(matches(Field::Author, "LOVELACE"));
        assert!(matches(Field::Author, "EXAMPLE.com"));
        assert!(!matches(Field::Committer, "ada"));
        // git's basic regular expressions
        assert!(matches(Field::Message, "^fix.*parser$"));
        assert!(matches(Field::Message, "^details"));
        assert!(!matches(Field::Message, "parser("));
        assert!(matches(Field::Message, "p[a-z]rs\\(er\\|ing\\)"));
        assert!(matches(Field::Author, "\\<ada\\>"));
        assert!(!matches(Field::Author, "\\<lace"));
        // what cannot be searched for is said
        assert!(Filter::new(Field::Message, "\\(a\\)\\1").is_err());
        assert!(Filter::new(Field::Message, "[unclosed").is_err());
        assert!(Filter::new(Field::Message, "a\\{99999\\}").is_err());
    }

    #[test]
    fn basic_regular_expressions_translate() {
        let cases = [
            ("a+b?", Some("a\\+b\\?")),
            ("a\\+b\\?", Some("a+b?")),
            ("*star", Some("\\*star")),
            ("^*", Some("^\\*")),
            ("x*", Some("x*")),
            ("\\(a\\|b\\)*", Some("(a|b)*")),
            ("[]a]", Some("[\\]a]")),
            ("[^\\]", Some("[^\\\\]")),
            ("[[:digit:]x-z]", Some("[[:digit:]x-z]")),
            ("a{2}", Some("a\\{2\\}")),
            ("a\\{2\\}", Some("a{2}")),
            ("\\(x\\)\\1", None),
            ("[unclosed", None),
        ];
        for (basic, expected) in cases {
            assert_eq!(basic_to_regex(basic).as_deref(), expected, "{basic}");
        }
    }
}
