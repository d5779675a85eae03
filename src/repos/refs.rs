//! The ref snapshot: every ref with its target and peeled id, branch and tag lists with the
//! commit/tag data that summary and refs show, and the decoration map — built once per change.

use super::RepoError;
use crate::git::Repo;
use crate::git::commit::{Person, read_commit};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use std::collections::HashMap;

/// A branch (local or remote) and its tip commit.
#[derive(Clone, Debug)]
pub struct Branch {
    /// Short name, e.g. `main` or `origin/main`.
    pub name: String,
    pub id: ObjectId,
    pub subject: String,
    pub author: Person,
    pub committer_time: gix::date::Time,
}

/// A tag, annotated or lightweight.
#[derive(Clone, Debug)]
pub struct Tag {
    pub name: String,
    /// What the ref points to: the tag object for annotated tags.
    pub id: ObjectId,
    /// The object at the end of the tag chain.
    pub target: ObjectId,
    pub target_kind: gix::object::Kind,
    pub annotated: bool,
    /// Tagger (annotated) or commit author (lightweight); absent for tags of trees and blobs.
    pub author: Option<Person>,
    /// Tagger date, else the tagged commit's committer date.
    pub date: Option<gix::date::Time>,
}

/// Any ref, for the dumb-HTTP `info/refs` listing.
#[derive(Clone, Debug)]
pub struct RefEntry {
    pub name: String,
    pub id: ObjectId,
    /// Set when `id` is a tag object.
    pub peeled: Option<ObjectId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DecorationKind {
    Head,
    Branch,
    AnnotatedTag,
    Tag,
    Remote,
    Other,
}

/// A ref label shown next to a commit.
#[derive(Clone, Debug)]
pub struct Decoration {
    pub kind: DecorationKind,
    /// Prettified name (`refs/heads/` and the like stripped).
    pub name: String,
    /// The full ref name, for git's decoration order.
    full: String,
}

/// The refs of a repository at one moment, without reading any object but loose tags: enough
/// to know the snapshot's [`version`](RefSnapshot::version) before building it.
#[derive(Debug)]
pub struct RefListing {
    pub head_branch: Option<String>,
    pub head_id: Option<ObjectId>,
    /// Every ref, sorted by name.
    pub all: Vec<RefEntry>,
    pub version: u64,
}

impl RefListing {
    pub fn read(repo: &gix::Repository) -> Result<RefListing, RepoError> {
        let head_branch = repo.head_name().ok().flatten().and_then(|n| {
            n.as_bstr()
                .strip_prefix(b"refs/heads/")
                .map(|s| s.to_str_lossy().into_owned())
        });
        let mut all = Vec::new();
        let platform = repo.references().map_err(RepoError::refs)?;
        for reference in platform.all().map_err(RepoError::refs)? {
            let Ok(reference) = reference else { continue };
            let name = reference.inner.name.as_bstr().to_str_lossy().into_owned();
            let Some(id) = reference.inner.target.try_id().map(ToOwned::to_owned) else {
                continue;
            };
            let peeled = peel(repo, id, reference.inner.peeled);
            all.push(RefEntry {
                name,
                id,
                peeled: peeled.filter(|p| *p != id),
            });
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        let head_id = repo.head_id().ok().map(|id| id.detach());
        let version = content_version(head_branch.as_deref(), head_id, &all);
        Ok(RefListing {
            head_branch,
            head_id,
            all,
            version,
        })
    }
}

/// All ref-derived data of a repository at one moment.
#[derive(Debug, Default)]
pub struct RefSnapshot {
    /// A hash of the ref values (HEAD's target and every ref's name, target and peeled id):
    /// equal in every process that sees the same refs, so instances agree on ETags.
    pub version: u64,
    /// The branch HEAD points to, when it is one.
    pub head_branch: Option<String>,
    /// Local branches, newest commit first.
    pub branches: Vec<Branch>,
    /// Remote-tracking branches, newest commit first.
    pub remotes: Vec<Branch>,
    /// Tags, newest first.
    pub tags: Vec<Tag>,
    /// Every ref, sorted by name.
    pub all: Vec<RefEntry>,
    pub decorations: HashMap<ObjectId, Vec<Decoration>>,
}

impl RefSnapshot {
    pub fn build(repo: &Repo) -> Result<RefSnapshot, RepoError> {
        Ok(RefSnapshot::from_listing(repo, RefListing::read(repo)?))
    }

    /// The snapshot of `listing`: reads the branch tips and tags it names.
    pub fn from_listing(repo: &Repo, listing: RefListing) -> RefSnapshot {
        let RefListing {
            head_branch,
            head_id,
            all,
            version,
        } = listing;
        let mut snap = RefSnapshot {
            head_branch,
            version,
            ..RefSnapshot::default()
        };
        for entry in &all {
            snap.add(
                repo,
                &entry.name,
                entry.id,
                entry.peeled.unwrap_or(entry.id),
            );
        }
        snap.all = all;
        if let Some(head) = head_id {
            snap.decorate(head, DecorationKind::Head, "HEAD", "HEAD");
        }
        snap.branches.sort_by(|a, b| {
            b.committer_time
                .seconds
                .cmp(&a.committer_time.seconds)
                .then(a.name.cmp(&b.name))
        });
        snap.remotes.sort_by(|a, b| {
            b.committer_time
                .seconds
                .cmp(&a.committer_time.seconds)
                .then(a.name.cmp(&b.name))
        });
        snap.tags.sort_by(|a, b| {
            let (da, db) = (a.date.map(|t| t.seconds), b.date.map(|t| t.seconds));
            db.cmp(&da).then(a.name.cmp(&b.name))
        });
        // git's order: HEAD first, then refs by full name, last first.
        for labels in snap.decorations.values_mut() {
            labels.sort_by(|a, b| {
                (b.kind == DecorationKind::Head)
                    .cmp(&(a.kind == DecorationKind::Head))
                    .then(b.full.cmp(&a.full))
            });
        }
        snap
    }

    fn add(&mut self, repo: &Repo, full: &str, id: ObjectId, target: ObjectId) {
        if let Some(name) = full.strip_prefix("refs/heads/") {
            if let Some(branch) = read_branch(repo, name, id) {
                self.branches.push(branch);
            }
            self.decorate(target, DecorationKind::Branch, name, full);
        } else if let Some(name) = full.strip_prefix("refs/remotes/") {
            if let Some(branch) = read_branch(repo, name, id) {
                self.remotes.push(branch);
            }
            self.decorate(target, DecorationKind::Remote, name, full);
        } else if let Some(name) = full.strip_prefix("refs/tags/") {
            let tag = read_tag(repo, name, id, target);
            let kind = if tag.annotated {
                DecorationKind::AnnotatedTag
            } else {
                DecorationKind::Tag
            };
            self.decorate(target, kind, name, full);
            self.tags.push(tag);
        } else {
            let name = full.strip_prefix("refs/").unwrap_or(full);
            self.decorate(target, DecorationKind::Other, name, full);
        }
    }

    fn decorate(&mut self, id: ObjectId, kind: DecorationKind, name: &str, full: &str) {
        self.decorations.entry(id).or_default().push(Decoration {
            kind,
            name: name.to_string(),
            full: full.to_string(),
        });
    }

    /// Whether `name` is a local branch.
    pub fn has_branch(&self, name: &str) -> bool {
        self.branches.iter().any(|b| b.name == name)
    }

    /// The commit `refs/notes/commits` points to, if the repository has notes.
    pub fn notes_commit(&self) -> Option<ObjectId> {
        self.notes_tip("refs/notes/commits")
    }

    /// The commit a notes ref (e.g. `refs/notes/signatures/tar.gz`) points to.
    pub fn notes_tip(&self, name: &str) -> Option<ObjectId> {
        let i = self
            .all
            .binary_search_by(|r| r.name.as_str().cmp(name))
            .ok()?;
        let notes = &self.all[i];
        Some(notes.peeled.unwrap_or(notes.id))
    }

    /// Whether any snapshot signatures (`refs/notes/signatures/*`) exist.
    pub fn has_signatures(&self) -> bool {
        const PREFIX: &str = "refs/notes/signatures/";
        let first = self.all.partition_point(|r| r.name.as_str() < PREFIX);
        self.all
            .get(first)
            .is_some_and(|r| r.name.starts_with(PREFIX))
    }

    pub fn tag(&self, name: &str) -> Option<&Tag> {
        self.tags.iter().find(|t| t.name == name)
    }
}

/// The content hash of a ref listing (`all` sorted by name): what HEAD names and points to, and
/// every ref's name, target and peeled id. Never stat data, so copies and other processes agree.
fn content_version(head_branch: Option<&str>, head: Option<ObjectId>, all: &[RefEntry]) -> u64 {
    let mut h = super::ContentHash::new();
    h.opt_str(head_branch);
    h.bytes(head.as_ref().map_or(&[][..], |id| id.as_bytes()));
    h.u64(all.len() as u64);
    for r in all {
        h.str(&r.name).bytes(r.id.as_bytes());
        h.bytes(r.peeled.as_ref().map_or(&[][..], |id| id.as_bytes()));
    }
    h.finish() as u64
}

/// The peeled id of a ref: packed-refs' `^` line when present, else by reading tag headers
/// (only ever for loose tags; once per ref change).
fn peel(repo: &gix::Repository, id: ObjectId, packed: Option<ObjectId>) -> Option<ObjectId> {
    if packed.is_some() {
        return packed;
    }
    let mut current = id;
    for _ in 0..16 {
        let header = repo.find_header(current).ok()?;
        if header.kind() != gix::object::Kind::Tag {
            return (current != id).then_some(current);
        }
        current = repo.find_tag(current).ok()?.target_id().ok()?.detach();
    }
    None
}

/// The branch `name` at commit `id`; none when the commit cannot be read (logged: the
/// repository is broken).
fn read_branch(repo: &Repo, name: &str, id: ObjectId) -> Option<Branch> {
    let commit = read_commit(repo, id)
        .map_err(|e| tracing::warn!("branch {name}: its commit {id} cannot be read: {e}"))
        .ok()?;
    Some(Branch {
        name: name.to_string(),
        id,
        subject: commit.subject.clone(),
        author: commit.author.clone(),
        committer_time: commit.committer.time,
    })
}

/// Tag `name`, the ref at `id` that peels to `target`. Read through the shared pack reader,
/// which maps packs for random reads: the tags of a cold repository are each one page away.
fn read_tag(repo: &Repo, name: &str, id: ObjectId, target: ObjectId) -> Tag {
    let commit = read_commit(repo, target).ok();
    let target_kind = match commit {
        Some(_) => gix::object::Kind::Commit,
        None => repo
            .read_object(&target)
            .ok()
            .flatten()
            .map_or(gix::object::Kind::Commit, |(kind, _)| kind),
    };
    let tagger = (id != target)
        .then(|| repo.read_object(&id).ok().flatten())
        .flatten()
        .filter(|(kind, _)| *kind == gix::object::Kind::Tag)
        .and_then(|(_, data)| {
            let tag = gix::objs::TagRef::from_bytes(&data, repo.object_hash()).ok()?;
            Some(Person::from_signature(tag.tagger().ok()??, None))
        });
    let from_commit = || {
        let commit = commit.as_ref()?;
        Some((commit.author.clone(), commit.committer.time))
    };
    let (author, date) = match tagger {
        Some(person) => (Some(person.clone()), Some(person.time)),
        None => from_commit().map_or((None, None), |(a, t)| (Some(a), Some(t))),
    };
    Tag {
        name: name.to_string(),
        id,
        target,
        target_kind,
        annotated: id != target,
        author,
        date,
    }
}
