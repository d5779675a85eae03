//! Path-limited history: git's default simplification, and for a graph the whole simplified
//! history sorted topologically with parents rewritten past the commits not listed.

use super::*;
use crate::git::Repo;
use crate::git::commit_graph::BloomFilters;
use crate::git::commit_index::CommitIndex;
use crate::git::error::GitError;
use crate::git::tree::entry_at;
use gix::ObjectId;
use gix::bstr::{BStr, BString};
use gix::objs::tree::EntryMode;
use std::collections::{BinaryHeap, HashMap, HashSet};

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
pub(super) fn rewritten_path_query(
    repo: &Repo,
    q: &LogQuery<'_>,
    path: &BStr,
) -> Result<LogPage, GitError> {
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
pub(super) struct PathWalk<'r> {
    repo: &'r Repo<'r>,
    /// The path looked at now (an older name after a followed rename).
    path: BString,
    pub(super) follow: bool,
    bloom: Option<&'r BloomFilters>,
    graph: Option<gix::commitgraph::Graph>,
    pub(super) commits: Option<&'r CommitIndex>,
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
    pub(super) fn new(
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

    pub(super) fn push(&mut self, id: ObjectId) -> Result<(), GitError> {
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
    pub(super) fn next_changing(
        &mut self,
        budget: &mut Budget,
    ) -> Result<Option<ObjectId>, GitError> {
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
        if let Some(old) = crate::git::diff::renamed_from(self.repo, parent_tree, tree, &self.path)?
        {
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
