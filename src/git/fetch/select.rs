//! Choosing the objects of a fetch: the commits walked from the wants, newest first, down to
//! what the client has (painted uninteresting from its common commits) or to its depth, then
//! every tree and blob those commits add, skipping what the trees at the edge already hold.

use super::paint::walk_painting;
use super::{ClientBases, Deepen, Filter, Selection, Wanted};
use crate::git::commit_index::CommitIndex;
use crate::git::{GitError, Repo};
use gix::ObjectId;
use gix::object::Kind;
use gix::objs::commit::ref_iter::Token;
// Sets and maps keyed by object ids hash the ids' first bytes (gix's tables): a full clone
// of git.git looks up millions of tree entries in `Trees::seen`.
use gix::hashtable::{HashMap, HashSet};
use std::collections::VecDeque;

/// Edge commits (had by the client, parents of sent ones) whose trees are read to leave out
/// what the client has; past this many the pack may hold objects the client has already.
const MAX_EDGES: usize = 32;

/// What a commit links to.
pub(super) struct Links {
    pub(super) tree: ObjectId,
    pub(super) parents: Vec<ObjectId>,
    pub(super) time: i64,
}

/// Reads commit links from the commit index when it has them, else from the objects.
pub(super) struct Commits<'a> {
    pub(super) repo: &'a Repo<'a>,
    pub(super) index: Option<&'a CommitIndex>,
}

impl Commits<'_> {
    pub(super) fn links(&self, id: &ObjectId) -> Result<Links, GitError> {
        if let Some(index) = self.index
            && let Some(pos) = index.position(id)
        {
            return Ok(Links {
                tree: index.tree(pos).to_owned(),
                parents: index.parents(pos).map(|p| index.id(p).to_owned()).collect(),
                time: index.time(pos),
            });
        }
        let bad = || GitError::NotFound(format!("not a commit: {id}"));
        let (kind, data) = self.repo.read_object(id)?.ok_or_else(bad)?;
        if kind != Kind::Commit {
            return Err(bad());
        }
        let mut links = Links {
            tree: ObjectId::null(self.repo.object_hash()),
            parents: Vec::new(),
            time: 0,
        };
        for token in gix::objs::CommitRefIter::from_bytes(&data, self.repo.object_hash()) {
            match token.map_err(GitError::internal)? {
                Token::Tree { id } => links.tree = id,
                Token::Parent { id } => links.parents.push(id),
                Token::Committer { signature } => {
                    links.time = signature.time().map(|t| t.seconds).unwrap_or_default();
                    break;
                }
                _ => {}
            }
        }
        Ok(links)
    }
}

/// The objects `wanted` needs sent, with the new shallow boundary.
pub fn select(
    repo: &Repo,
    index: Option<&CommitIndex>,
    wanted: &Wanted,
) -> Result<Selection, GitError> {
    if wanted.is_full_clone() {
        // A full clone reads every object: the whole pack, better read in order.
        repo.read_packs_ahead();
    }
    let commits = Commits { repo, index };
    let mut out = Selection::default();
    let mut seen: HashSet<ObjectId> = HashSet::default();
    let mut tips = Vec::new();
    let mut roots = Vec::new();
    for want in &wanted.wants {
        peel_want(repo, *want, &mut out, &mut seen, &mut tips, &mut roots)?;
    }
    let graft: HashSet<ObjectId> = wanted.client_shallow.iter().copied().collect();
    let walk = match &wanted.deepen {
        Deepen::Depth(depth) => walk_depth(&commits, &tips, wanted, &graft, *depth)?,
        _ => walk_painting(&commits, &tips, wanted, &graft)?,
    };
    out.shallow = walk.shallow;
    out.unshallow = walk.unshallow;
    out.commits = walk.sent.len();
    let sent: HashSet<ObjectId> = walk.sent.iter().map(|(id, _)| *id).collect();
    for (tag, peeled) in &wanted.tags {
        if sent.contains(peeled) && seen.insert(*tag) {
            out.objects.push(*tag);
        }
    }
    out.objects.extend(walk.sent.iter().map(|(id, _)| *id));
    if wanted.filter == Filter::NoTrees {
        out.objects.extend(roots);
        return Ok(out);
    }
    let mut trees = Trees {
        repo,
        filter: wanted.filter,
        seen,
        client: ClientBases::default(),
    };
    for edge in walk.edges.iter().take(MAX_EDGES) {
        let tree = commits.links(edge)?.tree;
        trees.mark_had(tree)?;
    }
    // The client's version of each path: from the newest edge commit.
    let counterpart = match walk.edges.first() {
        Some(edge) => Some(commits.links(edge)?.tree),
        None => None,
    };
    for root in roots {
        trees.add(root, None, &mut out.objects)?;
    }
    for (_, tree) in &walk.sent {
        trees.add(*tree, counterpart, &mut out.objects)?;
    }
    out.client = trees.client;
    Ok(out)
}

/// Adds a want to what is sent: tags peeled down to what they point to (each sent), commits
/// as tips of the walk, trees and blobs sent whatever the filter.
fn peel_want(
    repo: &Repo,
    want: ObjectId,
    out: &mut Selection,
    seen: &mut HashSet<ObjectId>,
    tips: &mut Vec<ObjectId>,
    roots: &mut Vec<ObjectId>,
) -> Result<(), GitError> {
    let mut id = want;
    for _ in 0..64 {
        let missing = || GitError::NotFound(format!("not our ref {id}"));
        let (kind, data) = repo.read_object(&id)?.ok_or_else(missing)?;
        match kind {
            Kind::Commit => {
                tips.push(id);
                return Ok(());
            }
            Kind::Tree => {
                roots.push(id);
                return Ok(());
            }
            Kind::Blob => {
                if seen.insert(id) {
                    out.objects.push(id);
                }
                return Ok(());
            }
            Kind::Tag => {
                if seen.insert(id) {
                    out.objects.push(id);
                }
                let tag = gix::objs::TagRefIter::from_bytes(&data, repo.object_hash());
                id = tag.target_id().map_err(GitError::internal)?;
            }
        }
    }
    Err(GitError::BadRequest(format!(
        "tag chain too long at {want}"
    )))
}

/// The commits to send (with their root trees), the client's commits at their edge, and the
/// shallow boundary.
#[derive(Default)]
pub(super) struct Walk {
    pub(super) sent: Vec<(ObjectId, ObjectId)>,
    pub(super) edges: Vec<ObjectId>,
    pub(super) shallow: Vec<ObjectId>,
    pub(super) unshallow: Vec<ObjectId>,
}

/// Walks breadth first from the wants to `depth` commits; the commits at the last level that
/// have parents become shallow. Client shallow commits reached above the last level are
/// unshallowed: their parents are walked too.
fn walk_depth(
    commits: &Commits,
    tips: &[ObjectId],
    wanted: &Wanted,
    graft: &HashSet<ObjectId>,
    depth: u32,
) -> Result<Walk, GitError> {
    let common: HashSet<ObjectId> = wanted.common.iter().copied().collect();
    let mut level: HashMap<ObjectId, u32> = HashMap::default();
    let mut queue: VecDeque<ObjectId> = VecDeque::new();
    for tip in tips {
        if level.insert(*tip, 1).is_none() {
            queue.push_back(*tip);
        }
    }
    let mut walk = Walk::default();
    while let Some(id) = queue.pop_front() {
        let at = level[&id];
        let l = commits.links(&id)?;
        let last = at >= depth;
        if graft.contains(&id) {
            if last {
                continue;
            }
            walk.unshallow.push(id);
        } else if common.contains(&id) {
            // Had by the client, but the walk goes on: below it, down to the depth, may be
            // commits a shallow client lacks.
        } else {
            if last && !l.parents.is_empty() {
                walk.shallow.push(id);
            }
            walk.sent.push((id, l.tree));
        }
        if last {
            continue;
        }
        for parent in l.parents {
            if let gix::hashtable::hash_map::Entry::Vacant(e) = level.entry(parent) {
                e.insert(at + 1);
                queue.push_back(parent);
            }
        }
    }
    Ok(walk)
}

/// The tree walk: every tree and blob not seen yet, as the filter lets them through.
struct Trees<'a> {
    repo: &'a Repo<'a>,
    filter: Filter,
    seen: HashSet<ObjectId>,
    client: ClientBases,
}

impl Trees<'_> {
    /// Marks `tree` and everything below it as on the client already.
    fn mark_had(&mut self, tree: ObjectId) -> Result<(), GitError> {
        let mut stack = vec![tree];
        while let Some(id) = stack.pop() {
            if !self.seen.insert(id) {
                continue;
            }
            self.client.objects.insert(id);
            let data = self.read_tree(&id)?;
            for entry in gix::objs::TreeRefIter::from_bytes(&data, self.repo.object_hash()) {
                let entry = entry.map_err(GitError::internal)?;
                let id = entry.oid.to_owned();
                if entry.mode.is_tree() {
                    stack.push(id);
                } else if !entry.mode.is_commit() && self.seen.insert(id) {
                    self.client.objects.insert(id);
                }
            }
        }
        Ok(())
    }

    /// Adds `tree` and what it holds that is not seen yet to `out`. `counterpart` is the
    /// client's tree at the same path, if it has one: what is added is paired with the
    /// client's object of the same name.
    fn add(
        &mut self,
        tree: ObjectId,
        counterpart: Option<ObjectId>,
        out: &mut Vec<ObjectId>,
    ) -> Result<(), GitError> {
        let mut stack = vec![(tree, counterpart)];
        while let Some((id, counterpart)) = stack.pop() {
            if !self.seen.insert(id) {
                continue;
            }
            out.push(id);
            let theirs = match counterpart {
                Some(other) => {
                    self.client.by_path.insert(id, other);
                    Some(self.read_tree(&other)?)
                }
                None => None,
            };
            let theirs = theirs.as_deref().map(|t| self.entries(t)).transpose()?;
            let named = |name: &[u8], tree: bool| {
                theirs
                    .as_ref()
                    .and_then(|t| t.get(name))
                    .filter(|(_, is_tree)| *is_tree == tree)
                    .map(|(id, _)| *id)
            };
            let data = self.read_tree(&id)?;
            for entry in gix::objs::TreeRefIter::from_bytes(&data, self.repo.object_hash()) {
                let entry = entry.map_err(GitError::internal)?;
                let id = entry.oid.to_owned();
                if entry.mode.is_tree() {
                    stack.push((id, named(entry.filename, true)));
                } else if !entry.mode.is_commit() && self.blob_passes(&id)? && self.seen.insert(id)
                {
                    out.push(id);
                    if let Some(other) = named(entry.filename, false) {
                        self.client.by_path.insert(id, other);
                    }
                }
            }
        }
        Ok(())
    }

    /// The entries of a tree by name: their ids and whether they are trees.
    fn entries<'t>(
        &self,
        data: &'t [u8],
    ) -> Result<std::collections::HashMap<&'t [u8], (ObjectId, bool)>, GitError> {
        gix::objs::TreeRefIter::from_bytes(data, self.repo.object_hash())
            .map(|entry| {
                let entry = entry.map_err(GitError::internal)?;
                Ok((
                    entry.filename.as_ref(),
                    (entry.oid.to_owned(), entry.mode.is_tree()),
                ))
            })
            .collect()
    }

    fn blob_passes(&self, id: &ObjectId) -> Result<bool, GitError> {
        Ok(match self.filter {
            Filter::None => true,
            Filter::NoBlobs | Filter::NoTrees => false,
            Filter::BlobLimit(limit) => self.repo.object_size(id)? <= limit,
        })
    }

    fn read_tree(&self, id: &ObjectId) -> Result<std::sync::Arc<Vec<u8>>, GitError> {
        match self.repo.read_object(id)? {
            Some((Kind::Tree, data)) => Ok(data),
            _ => Err(GitError::internal_msg(format!("missing tree {id}"))),
        }
    }
}
