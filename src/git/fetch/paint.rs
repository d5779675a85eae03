//! The painting walk of a fetch (git's own way): newest first from the wants and from the
//! commits the client has, painting what the latter reach as had, until no wanted commit is
//! left in the queue. Commits are numbered nodes: their commit-index position when the index
//! has them (parents, time and tree read from it, nothing allocated), else a number past the
//! index's end with links read from the object.

use super::select::{Commits, Links, Walk};
use super::{Deepen, Wanted};
use crate::git::GitError;
use crate::git::commit_index::CommitIndex;
use gix::ObjectId;
use std::collections::{BinaryHeap, HashSet};

/// A commit of the walk.
type Node = u32;

/// A commit's place in the walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Paint {
    /// Not reached yet.
    Unseen,
    /// Queued as wanted.
    Wanted,
    /// Queued as had by the client (or excluded by `deepen-not`).
    Had,
    /// Taken from the queue as wanted: sent unless painted had later.
    Taken,
    /// Taken as had.
    Done,
}

/// The commits reached so far, as nodes.
struct Graph<'a> {
    commits: &'a Commits<'a>,
    index: Option<&'a CommitIndex>,
    /// Nodes below this are index positions.
    indexed: u32,
    /// Commits the index lacks, numbered from `indexed` on.
    others: gix::hashtable::HashMap<ObjectId, Node>,
    other_links: Vec<(ObjectId, Links)>,
}

impl<'a> Graph<'a> {
    fn new(commits: &'a Commits<'a>) -> Graph<'a> {
        let index = commits.index;
        Graph {
            commits,
            index,
            indexed: index.map_or(0, |i| i.len() as u32),
            others: Default::default(),
            other_links: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.indexed as usize + self.other_links.len()
    }

    fn node(&mut self, id: &ObjectId) -> Result<Node, GitError> {
        if let Some(pos) = self.index.and_then(|i| i.position(id)) {
            return Ok(pos);
        }
        if let Some(node) = self.others.get(id) {
            return Ok(*node);
        }
        let links = self.commits.links(id)?;
        let node = self.indexed + self.other_links.len() as u32;
        self.others.insert(*id, node);
        self.other_links.push((*id, links));
        Ok(node)
    }

    fn other(&self, node: Node) -> Option<&(ObjectId, Links)> {
        node.checked_sub(self.indexed)
            .map(|i| &self.other_links[i as usize])
    }

    fn id(&self, node: Node) -> ObjectId {
        match (self.other(node), self.index) {
            (Some((id, _)), _) => *id,
            (None, Some(index)) => index.id(node).to_owned(),
            (None, None) => unreachable!("node {node} without an index"),
        }
    }

    fn time(&self, node: Node) -> i64 {
        match (self.other(node), self.index) {
            (Some((_, links)), _) => links.time,
            (None, Some(index)) => index.time(node),
            (None, None) => unreachable!("node {node} without an index"),
        }
    }

    fn tree(&self, node: Node) -> ObjectId {
        match (self.other(node), self.index) {
            (Some((_, links)), _) => links.tree,
            (None, Some(index)) => index.tree(node).to_owned(),
            (None, None) => unreachable!("node {node} without an index"),
        }
    }

    /// The parents of `node`, into `out` (cleared first).
    fn parents(&mut self, node: Node, out: &mut Vec<Node>) -> Result<(), GitError> {
        out.clear();
        match self.other(node) {
            Some((_, links)) => {
                for parent in links.parents.clone() {
                    out.push(self.node(&parent)?);
                }
            }
            None => out.extend(self.index.expect("an index node").parents(node)),
        }
        Ok(())
    }
}

/// The walk's state: each node's paint, and the queue, newest first.
struct Painting<'a> {
    graph: Graph<'a>,
    paint: Vec<Paint>,
    queue: BinaryHeap<(i64, Node)>,
    /// Queued commits still painted wanted: the walk ends when none is left.
    wanted_queued: usize,
}

impl Painting<'_> {
    fn paint(&self, node: Node) -> Paint {
        self.paint
            .get(node as usize)
            .copied()
            .unwrap_or(Paint::Unseen)
    }

    fn set(&mut self, node: Node, paint: Paint) {
        if self.paint.len() <= node as usize {
            self.paint
                .resize(self.graph.len().max(node as usize + 1), Paint::Unseen);
        }
        self.paint[node as usize] = paint;
    }

    /// Queues `node` painted wanted or had; a commit reached again as had is repainted had
    /// (and queued again when it was taken, so that its parents are painted too).
    fn push(&mut self, node: Node, had: bool) {
        match self.paint(node) {
            Paint::Unseen => {
                self.queue.push((self.graph.time(node), node));
                self.set(node, if had { Paint::Had } else { Paint::Wanted });
                if !had {
                    self.wanted_queued += 1;
                }
            }
            Paint::Wanted if had => {
                self.set(node, Paint::Had);
                self.wanted_queued -= 1;
            }
            Paint::Taken if had => {
                self.set(node, Paint::Had);
                self.queue.push((self.graph.time(node), node));
            }
            _ => {}
        }
    }
}

/// The commits to send from `tips` down to what the client has (`wanted.common`), cut by
/// `deepen-since`/`deepen-not`; the client's shallow commits (`graft`) are walked as if they
/// had no parents.
pub(super) fn walk_painting(
    commits: &Commits,
    tips: &[ObjectId],
    wanted: &Wanted,
    graft: &gix::hashtable::HashSet<ObjectId>,
) -> Result<Walk, GitError> {
    let graph = Graph::new(commits);
    let paint = vec![Paint::Unseen; graph.len()];
    let mut painting = Painting {
        graph,
        paint,
        queue: BinaryHeap::new(),
        wanted_queued: 0,
    };
    let since = match wanted.deepen {
        Deepen::Since(t) => Some(t),
        _ => None,
    };
    let had_tips: Vec<ObjectId> = match &wanted.deepen {
        Deepen::Not(not) => wanted.common.iter().chain(not).copied().collect(),
        _ => wanted.common.clone(),
    };
    for id in &had_tips {
        let node = painting.graph.node(id)?;
        painting.push(node, true);
    }
    for id in tips {
        let node = painting.graph.node(id)?;
        painting.push(node, false);
    }
    let is_graft = |graph: &Graph, node| !graft.is_empty() && graft.contains(&graph.id(node));
    let mut order = Vec::new();
    let mut cut_by_age = HashSet::new();
    let mut parents = Vec::new();
    while painting.wanted_queued > 0 {
        let Some((time, node)) = painting.queue.pop() else {
            break;
        };
        let had = match painting.paint(node) {
            Paint::Wanted => {
                painting.wanted_queued -= 1;
                false
            }
            Paint::Had => true,
            _ => continue,
        };
        if !had && since.is_some_and(|t| time < t) {
            cut_by_age.insert(node);
            painting.set(node, Paint::Done);
            continue;
        }
        painting.set(node, if had { Paint::Done } else { Paint::Taken });
        if !had {
            order.push(node);
        }
        if is_graft(&painting.graph, node) {
            continue;
        }
        painting.graph.parents(node, &mut parents)?;
        for parent in &parents {
            painting.push(*parent, had);
        }
    }

    let deepen_not = matches!(wanted.deepen, Deepen::Not(_));
    let mut common = HashSet::new();
    for id in &wanted.common {
        common.insert(painting.graph.node(id)?);
    }
    let mut walk = Walk::default();
    let mut edges = HashSet::new();
    for node in order {
        if painting.paint(node) != Paint::Taken {
            continue;
        }
        let mut boundary = false;
        if !is_graft(&painting.graph, node) {
            painting.graph.parents(node, &mut parents)?;
            for parent in &parents {
                match painting.paint(*parent) {
                    Paint::Taken => {}
                    _ if cut_by_age.contains(parent) => boundary = true,
                    _ if deepen_not && !common.contains(parent) => boundary = true,
                    _ => {
                        if edges.insert(*parent) {
                            walk.edges.push(painting.graph.id(*parent));
                        }
                    }
                }
            }
        }
        let id = painting.graph.id(node);
        if boundary {
            walk.shallow.push(id);
        }
        walk.sent.push((id, painting.graph.tree(node)));
    }
    Ok(walk)
}
