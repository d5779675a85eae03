//! Read-only git queries over gix, returning plain data: no HTML, no HTTP.

pub mod archive;
pub mod blame;
pub mod changes;
pub mod commit;
pub mod commit_graph;
pub mod commit_index;
pub mod diff;
pub mod encoding;
mod error;
pub mod fetch;
pub mod format_patch;
pub mod log;
pub mod notes;
pub mod pack_index;
pub mod packs;
pub mod rev;
pub mod tree;

pub use commit::CommitInfo;
pub use error::GitError;
pub use log::LogPage;
pub use packs::Object;
use std::sync::Arc;

/// A repository handle for the queries: gix's, whose objects are read through the shared pack
/// reader, and whose commits are kept decoded for every repository, when the repository's
/// store has a pack set (a store with replacement refs has none: its objects are its own).
pub struct Repo<'a> {
    gix: &'a gix::Repository,
    shared: Option<Shared<'a>>,
}

/// The pack reader, the repository's pack set and the kept commits.
type Shared<'a> = (&'a packs::Packs, &'a packs::PackSet, &'a commit::Commits);

impl std::ops::Deref for Repo<'_> {
    type Target = gix::Repository;

    fn deref(&self) -> &gix::Repository {
        self.gix
    }
}

impl<'a> Repo<'a> {
    pub fn new(gix: &'a gix::Repository, shared: Option<Shared<'a>>) -> Repo<'a> {
        Repo { gix, shared }
    }

    /// Object `id`: its kind and bytes (shared with the pack reader's caches), or `None` when
    /// the repository has no such object.
    pub fn read_object(&self, id: &gix::hash::oid) -> Result<Option<Object>, GitError> {
        if let Some((packs, set, _)) = self.shared
            && let Some(found) = packs.read(set, id)?
        {
            return Ok(Some(found));
        }
        use gix::objs::Find;
        let mut data = Vec::new();
        let found = self
            .gix
            .objects
            .try_find(id, &mut data)
            .map_err(GitError::internal)?;
        // The kind first: what was found borrows the bytes.
        let kind = found.map(|found| found.kind);
        Ok(kind.map(|kind| (kind, Arc::new(data))))
    }

    /// Where object `id` is stored in a pack the shared reader has open (`None`: loose, or
    /// read through gix only).
    pub fn place(&self, id: &gix::hash::oid) -> Option<packs::Place> {
        let (packs, set, _) = self.shared?;
        packs.place(set, id)
    }

    /// Has the kernel read the shared reader's packs ahead, for a walk through most of them.
    pub fn read_packs_ahead(&self) {
        if let Some((_, set, _)) = self.shared {
            set.read_all_ahead();
        }
    }

    /// The size of object `id`, which the repository names (a tree entry, an object walk),
    /// without reading it: its absence, like an unreadable header, is a broken repository.
    pub fn object_size(&self, id: &gix::hash::oid) -> Result<u64, GitError> {
        if let Some((packs, set, _)) = self.shared
            && let Some(size) = packs.size(set, id)?
        {
            return Ok(size);
        }
        self.gix
            .try_find_header(id)
            .map_err(|e| GitError::internal_in(format!("reading the header of {id}"), e))?
            .map(|h| h.size())
            .ok_or_else(|| GitError::internal_msg(format!("missing object {id}")))
    }

    /// Whether the repository has object `id`.
    pub fn has_object(&self, id: &gix::hash::oid) -> Result<bool, GitError> {
        if let Some((packs, set, _)) = self.shared
            && packs.size(set, id)?.is_some()
        {
            return Ok(true);
        }
        Ok(self.gix.has_object(id))
    }

    /// The bytes of blob `id`, which a tree names: its absence is a broken repository (an
    /// internal error), not a user's mistake.
    pub fn read_named_blob(&self, id: &gix::hash::oid) -> Result<Arc<Vec<u8>>, GitError> {
        let (_, data) = self
            .read_object(id)?
            .ok_or_else(|| GitError::internal_msg(format!("missing blob {id}")))?;
        Ok(data)
    }
}
