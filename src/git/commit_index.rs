//! An in-memory index of the commits of an object database: for every commit its parents,
//! committer time, root tree and generation number (topological level), in struct-of-arrays
//! form — positions are `u32` in id order, found through a 256-entry fanout and a sorted id
//! array, parents are positions (two inline, more in an overflow list for octopus merges) —
//! so walking history reads no objects and allocates nothing per commit.
//!
//! It is loaded from the commit-graph file (the same shape) when there is one, and otherwise
//! built by inflating each commit once, walking from the ref tips; [`CommitIndex::extended`]
//! walks only from tips it does not know until it meets known commits.

use super::error::GitError;
use gix::ObjectId;
use gix::hash::oid;
use gix::objs::FindExt;
use gix::objs::commit::ref_iter::Token;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

/// A parent slot without a parent.
const NO_PARENT: u32 = u32::MAX;
/// In the second parent slot: the rest of the parents are in the overflow list from the
/// position in the low bits; the last of them has this bit set.
const OVERFLOW: u32 = 0x8000_0000;

/// The commits of one object database.
#[derive(Debug, PartialEq, Eq)]
pub struct CommitIndex {
    kind: gix::hash::Kind,
    /// `fanout[b]`: how many ids start with a byte ≤ `b`.
    fanout: [u32; 256],
    /// Commit ids, sorted, `hash_len` bytes each.
    ids: Vec<u8>,
    /// Root tree ids by position.
    trees: Vec<u8>,
    times: Vec<i64>,
    generations: Vec<u32>,
    parent1: Vec<u32>,
    parent2: Vec<u32>,
    /// Third and later parents (and the second) of octopus merges.
    overflow: Vec<u32>,
}

/// A commit as read before positions are known.
struct Raw {
    id: ObjectId,
    tree: ObjectId,
    time: i64,
    /// Its parents: `parents[start..end]` of the builder's list.
    parents: (u32, u32),
}

impl CommitIndex {
    /// An index of no commits.
    pub fn empty(kind: gix::hash::Kind) -> CommitIndex {
        CommitIndex {
            kind,
            fanout: [0; 256],
            ids: Vec::new(),
            trees: Vec::new(),
            times: Vec::new(),
            generations: Vec::new(),
            parent1: Vec::new(),
            parent2: Vec::new(),
            overflow: Vec::new(),
        }
    }

    /// The repository's commits: from its commit-graph when it has one, then extended by the
    /// commits reachable from `tips` that the graph does not hold (or all of them, without a
    /// graph).
    pub fn load(repo: &gix::Repository, tips: &[ObjectId]) -> Result<CommitIndex, GitError> {
        let base = match repo.commit_graph_if_enabled().ok().flatten() {
            Some(graph) => CommitIndex::from_graph(&graph)?,
            None => CommitIndex::empty(repo.object_hash()),
        };
        Ok(base.extended(repo, tips)?.unwrap_or(base))
    }

    /// The commits of a commit-graph (all its layers).
    pub fn from_graph(graph: &gix::commitgraph::Graph) -> Result<CommitIndex, GitError> {
        if let Some(index) = CommitIndex::from_sorted_graph(graph)? {
            return Ok(index);
        }
        let mut raws = Vec::with_capacity(graph.num_commits() as usize);
        let mut parents = Vec::new();
        for commit in graph.iter_commits() {
            let start = parents.len() as u32;
            for p in commit.iter_parents() {
                let p = p.map_err(GitError::internal)?;
                parents.push(graph.id_at(p).to_owned());
            }
            raws.push(Raw {
                id: commit.id().to_owned(),
                tree: commit.root_tree_id().to_owned(),
                time: commit_time(&commit),
                parents: (start, parents.len() as u32),
            });
        }
        assemble(graph.object_hash(), raws, &parents)
    }

    /// A graph whose commits are in id order (one layer, as `git commit-graph write` makes):
    /// its positions are the index's, so parents need no lookup and nothing is sorted.
    /// `None` when the order is another (split layers).
    fn from_sorted_graph(graph: &gix::commitgraph::Graph) -> Result<Option<CommitIndex>, GitError> {
        let n = graph.num_commits() as usize;
        if n >= OVERFLOW as usize {
            return Ok(None);
        }
        let kind = graph.object_hash();
        let mut index = CommitIndex::empty(kind);
        index.ids.reserve_exact(n * kind.len_in_bytes());
        index.trees.reserve_exact(n * kind.len_in_bytes());
        index.times.reserve_exact(n);
        index.parent1.reserve_exact(n);
        index.parent2.reserve_exact(n);
        for (pos, commit) in graph.iter_commits().enumerate() {
            let id = commit.id().as_bytes();
            if pos > 0 && index.id(pos as u32 - 1).as_bytes() >= id {
                return Ok(None);
            }
            index.ids.extend_from_slice(id);
            index
                .trees
                .extend_from_slice(commit.root_tree_id().as_bytes());
            index.times.push(commit_time(&commit));
            index.fanout[usize::from(id[0])] += 1;
            let mut parents = commit.iter_parents().map(|p| p.map(|p| p.0));
            let first = parents.next().transpose().map_err(GitError::internal)?;
            let rest = parents
                .collect::<Result<Vec<u32>, _>>()
                .map_err(GitError::internal)?;
            if first.iter().chain(&rest).any(|&p| p as usize >= n) {
                return Err(GitError::internal(std::io::Error::other(
                    "commit-graph parent out of range",
                )));
            }
            index.push_parents(first.unwrap_or(NO_PARENT), &rest);
        }
        for b in 1..256 {
            index.fanout[b] += index.fanout[b - 1];
        }
        index.overflow.shrink_to_fit();
        index.generations = generations(&index);
        Ok(Some(index))
    }

    /// Appends the next commit's parents: the first, and the rest (inline or in the
    /// overflow list).
    fn push_parents(&mut self, first: u32, rest: &[u32]) {
        self.parent1.push(first);
        self.parent2.push(match rest {
            [] => NO_PARENT,
            [second] => *second,
            _ => {
                let at = self.overflow.len() as u32;
                self.overflow.extend_from_slice(rest);
                if let Some(last) = self.overflow.last_mut() {
                    *last |= OVERFLOW;
                }
                at | OVERFLOW
            }
        });
    }

    /// This index with the commits reachable from `tips` that it lacks, each inflated once;
    /// `None` when it has them all. Tips that are not commits are left out.
    pub fn extended(
        &self,
        repo: &gix::Repository,
        tips: &[ObjectId],
    ) -> Result<Option<CommitIndex>, GitError> {
        let mut seen = HashSet::new();
        let mut stack: Vec<ObjectId> = tips
            .iter()
            .filter(|t| self.position(t).is_none() && is_commit(repo, t))
            .copied()
            .collect();
        if stack.is_empty() {
            return Ok(None);
        }
        let mut raws = Vec::new();
        let mut parents = Vec::new();
        let mut buf = Vec::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            let start = parents.len() as u32;
            let (tree, time) = read_commit_into(repo, &id, &mut buf, &mut parents)?;
            for p in &parents[start as usize..] {
                if self.position(p).is_none() && !seen.contains(p) {
                    stack.push(*p);
                }
            }
            raws.push(Raw {
                id,
                tree,
                time,
                parents: (start, parents.len() as u32),
            });
        }
        self.append_raws(&mut raws, &mut parents);
        Ok(Some(assemble(self.kind, raws, &parents)?))
    }

    /// Adds this index's own commits to a builder's lists.
    fn append_raws(&self, raws: &mut Vec<Raw>, parents: &mut Vec<ObjectId>) {
        raws.reserve(self.len());
        for pos in 0..self.len() as u32 {
            let start = parents.len() as u32;
            parents.extend(self.parents(pos).map(|p| self.id(p).to_owned()));
            raws.push(Raw {
                id: self.id(pos).to_owned(),
                tree: self.tree(pos).to_owned(),
                time: self.time(pos),
                parents: (start, parents.len() as u32),
            });
        }
    }

    /// How many commits it holds.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The bytes it occupies in memory.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<CommitIndex>()
            + self.ids.capacity()
            + self.trees.capacity()
            + self.times.capacity() * 8
            + (self.generations.capacity()
                + self.parent1.capacity()
                + self.parent2.capacity()
                + self.overflow.capacity())
                * 4
    }

    fn hash_len(&self) -> usize {
        self.kind.len_in_bytes()
    }

    /// The position of commit `id`.
    pub fn position(&self, id: &oid) -> Option<u32> {
        let bytes = id.as_bytes();
        if bytes.len() != self.hash_len() || self.is_empty() {
            return None;
        }
        let first = usize::from(bytes[0]);
        let mut lo = if first == 0 {
            0
        } else {
            self.fanout[first - 1] as usize
        };
        let mut hi = self.fanout[first] as usize;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.id(mid as u32).as_bytes().cmp(bytes) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// The id of the commit at `pos`.
    pub fn id(&self, pos: u32) -> &oid {
        let len = self.hash_len();
        oid::from_bytes_unchecked(&self.ids[pos as usize * len..(pos as usize + 1) * len])
    }

    /// The root tree of the commit at `pos`.
    pub fn tree(&self, pos: u32) -> &oid {
        let len = self.hash_len();
        oid::from_bytes_unchecked(&self.trees[pos as usize * len..(pos as usize + 1) * len])
    }

    /// The committer time (seconds) of the commit at `pos`.
    pub fn time(&self, pos: u32) -> i64 {
        self.times[pos as usize]
    }

    /// The topological level of the commit at `pos`: 1 for a root, else one more than its
    /// highest parent (git's generation number v1).
    pub fn generation(&self, pos: u32) -> u32 {
        self.generations[pos as usize]
    }

    /// The parents of the commit at `pos`, in order.
    pub fn parents(&self, pos: u32) -> Parents<'_> {
        Parents {
            index: self,
            first: self.parent1[pos as usize],
            second: self.parent2[pos as usize],
            state: 0,
        }
    }

    /// Whether `ancestor` is `of` or one of its ancestors; `None` when either is not in the
    /// index. Walks down from `of` only as far as commits of a higher generation than
    /// `ancestor` (no ancestor of a commit has a generation as high as its own).
    pub fn is_ancestor(&self, ancestor: &oid, of: &oid) -> Option<bool> {
        let target = self.position(ancestor)?;
        let floor = self.generation(target);
        let mut seen = vec![0u64; self.len().div_ceil(64)];
        let mut stack = vec![self.position(of)?];
        while let Some(pos) = stack.pop() {
            if pos == target {
                return Some(true);
            }
            if self.generation(pos) <= floor {
                continue;
            }
            for parent in self.parents(pos) {
                let (word, bit) = (parent as usize / 64, 1u64 << (parent % 64));
                if seen[word] & bit == 0 {
                    seen[word] |= bit;
                    stack.push(parent);
                }
            }
        }
        Some(false)
    }

    /// The commits reachable from `tips`, newest committer time first, in exactly the order
    /// of gix's (and so the log's) commit-time walk; with `since`, commits older than that are
    /// neither listed nor walked past (git's `--since`). `None` when a tip is not in the index.
    pub fn newest_first(
        self: &Arc<Self>,
        tips: &[ObjectId],
        since: Option<i64>,
    ) -> Option<NewestFirst> {
        let mut walk = NewestFirst {
            index: Arc::clone(self),
            queue: BinaryHeap::with_capacity(16),
            seen: vec![0; self.len().div_ceil(64)],
            cutoff: since.unwrap_or(i64::MIN),
        };
        for tip in tips {
            let pos = self.position(tip)?;
            walk.enqueue(pos);
        }
        Some(walk)
    }
}

/// A commit-graph commit's committer time.
fn commit_time(commit: &gix::commitgraph::file::Commit<'_>) -> i64 {
    i64::try_from(commit.committer_timestamp()).unwrap_or(i64::MAX)
}

/// Whether `id` names a commit.
fn is_commit(repo: &gix::Repository, id: &ObjectId) -> bool {
    repo.find_header(*id)
        .is_ok_and(|h| h.kind() == gix::object::Kind::Commit)
}

/// Reads commit `id` once: its tree and committer time, its parents appended to `parents`.
fn read_commit_into(
    repo: &gix::Repository,
    id: &ObjectId,
    buf: &mut Vec<u8>,
    parents: &mut Vec<ObjectId>,
) -> Result<(ObjectId, i64), GitError> {
    let iter = repo
        .objects
        .find_commit_iter(id, buf)
        .map_err(|_| GitError::NotFound(format!("Bad commit: {id}")))?;
    let mut tree = None;
    for token in iter {
        match token.map_err(GitError::internal)? {
            Token::Tree { id } => tree = Some(id),
            Token::Parent { id } => parents.push(id),
            Token::Committer { signature } => {
                let tree = tree.ok_or_else(|| GitError::NotFound(format!("Bad commit: {id}")))?;
                return Ok((tree, signature.seconds()));
            }
            _ => {}
        }
    }
    Err(GitError::NotFound(format!("Bad commit: {id}")))
}

/// The index of `raws` (unique ids; every parent among them).
fn assemble(
    kind: gix::hash::Kind,
    mut raws: Vec<Raw>,
    parents: &[ObjectId],
) -> Result<CommitIndex, GitError> {
    if raws.len() >= OVERFLOW as usize {
        return Err(GitError::internal(std::io::Error::other(
            "too many commits",
        )));
    }
    raws.sort_unstable_by_key(|r| r.id);
    let n = raws.len();
    let len = kind.len_in_bytes();
    let mut index = CommitIndex::empty(kind);
    index.ids.reserve_exact(n * len);
    index.trees.reserve_exact(n * len);
    index.times.reserve_exact(n);
    for raw in &raws {
        index.ids.extend_from_slice(raw.id.as_bytes());
        index.trees.extend_from_slice(raw.tree.as_bytes());
        index.times.push(raw.time);
        index.fanout[usize::from(raw.id.as_bytes()[0])] += 1;
    }
    for b in 1..256 {
        index.fanout[b] += index.fanout[b - 1];
    }
    index.parent1.reserve_exact(n);
    index.parent2.reserve_exact(n);
    for raw in &raws {
        let mut positions = parents[raw.parents.0 as usize..raw.parents.1 as usize]
            .iter()
            .map(|p| {
                index.position(p).ok_or_else(|| {
                    GitError::NotFound(format!("Bad commit: parent {p} of {}", raw.id))
                })
            });
        let first = positions.next().transpose()?.unwrap_or(NO_PARENT);
        let rest = positions.collect::<Result<Vec<u32>, _>>()?;
        index.push_parents(first, &rest);
    }
    index.overflow.shrink_to_fit();
    index.generations = generations(&index);
    Ok(index)
}

/// Every commit's topological level, computed without recursion.
fn generations(index: &CommitIndex) -> Vec<u32> {
    let mut levels = vec![0u32; index.len()];
    let mut stack = Vec::new();
    for start in 0..index.len() as u32 {
        if levels[start as usize] != 0 {
            continue;
        }
        stack.push(start);
        while let Some(&pos) = stack.last() {
            let mut ready = true;
            let mut level = 1;
            for p in index.parents(pos) {
                match levels[p as usize] {
                    0 => {
                        ready = false;
                        stack.push(p);
                    }
                    l => level = level.max(l.saturating_add(1)),
                }
            }
            if ready {
                levels[pos as usize] = level;
                stack.pop();
            }
        }
    }
    levels
}

/// The parents of one commit, as positions.
pub struct Parents<'a> {
    index: &'a CommitIndex,
    first: u32,
    second: u32,
    /// 0: the first is next, 1: the second, 2 + i: the overflow list's entry at
    /// `second`'s position + i, `u32::MAX`: done.
    state: u32,
}

impl Iterator for Parents<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match self.state {
            0 => {
                self.state = 1;
                if self.first == NO_PARENT {
                    self.state = u32::MAX;
                    return None;
                }
                Some(self.first)
            }
            1 if self.second == NO_PARENT => {
                self.state = u32::MAX;
                None
            }
            1 if self.second & OVERFLOW == 0 => {
                self.state = u32::MAX;
                Some(self.second)
            }
            u32::MAX => None,
            _ => {
                let at = (self.second & !OVERFLOW) + (self.state - 1);
                let raw = *self.index.overflow.get(at as usize)?;
                self.state = if raw & OVERFLOW != 0 {
                    u32::MAX
                } else {
                    self.state + 1
                };
                Some(raw & !OVERFLOW)
            }
        }
    }
}

/// A queued commit, ordered by committer time alone (as gix's queue orders it, so that the
/// heap pops equal times in the same order).
struct ByTime {
    time: i64,
    pos: u32,
}

impl PartialEq for ByTime {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time
    }
}

impl Eq for ByTime {}

impl PartialOrd for ByTime {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByTime {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.time.cmp(&other.time)
    }
}

/// A newest-first walk over the index (see [`CommitIndex::newest_first`]).
pub struct NewestFirst {
    index: Arc<CommitIndex>,
    queue: BinaryHeap<ByTime>,
    /// One bit per position: queued once already.
    seen: Vec<u64>,
    /// Commits older than this are not queued.
    cutoff: i64,
}

impl NewestFirst {
    /// The index walked.
    pub fn index(&self) -> &CommitIndex {
        &self.index
    }

    fn enqueue(&mut self, pos: u32) {
        enqueue(
            &self.index,
            &mut self.seen,
            &mut self.queue,
            self.cutoff,
            pos,
        );
    }
}

/// Queues `pos` unless it was seen before or is older than `cutoff` (it counts as seen then
/// too, as in gix's walk).
fn enqueue(
    index: &CommitIndex,
    seen: &mut [u64],
    queue: &mut BinaryHeap<ByTime>,
    cutoff: i64,
    pos: u32,
) {
    let (word, bit) = (pos as usize / 64, 1u64 << (pos % 64));
    if seen[word] & bit == 0 {
        seen[word] |= bit;
        let time = index.time(pos);
        if time >= cutoff {
            queue.push(ByTime { time, pos });
        }
    }
}

impl Iterator for NewestFirst {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let ByTime { pos, .. } = self.queue.pop()?;
        for parent in self.index.parents(pos) {
            enqueue(
                &self.index,
                &mut self.seen,
                &mut self.queue,
                self.cutoff,
                parent,
            );
        }
        Some(pos)
    }
}
