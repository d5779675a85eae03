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
pub mod files;
pub mod format_patch;
pub mod log;
pub mod notes;
pub mod packs;
pub mod rev;
pub mod tree;

pub use commit::CommitInfo;
pub use error::GitError;
pub use log::LogPage;

/// A repository handle for the queries: gix's, whose trees and blobs are read through the
/// shared pack reader when the repository's store has a pack set.
pub struct Repo<'a> {
    gix: &'a gix::Repository,
    packs: Option<(&'a packs::Packs, &'a packs::PackSet)>,
}

impl std::ops::Deref for Repo<'_> {
    type Target = gix::Repository;

    fn deref(&self) -> &gix::Repository {
        self.gix
    }
}

impl<'a> Repo<'a> {
    pub fn new(
        gix: &'a gix::Repository,
        packs: Option<(&'a packs::Packs, &'a packs::PackSet)>,
    ) -> Repo<'a> {
        Repo { gix, packs }
    }

    /// Reads object `id` into `buf`: its kind, or `None` when the repository has no such object.
    pub fn read_object(
        &self,
        id: &gix::hash::oid,
        buf: &mut Vec<u8>,
    ) -> Result<Option<gix::object::Kind>, GitError> {
        if let Some((packs, set)) = self.packs
            && let Some(kind) = packs.read(set, id, buf)?
        {
            return Ok(Some(kind));
        }
        use gix::objs::Find;
        let found = self
            .gix
            .objects
            .try_find(id, buf)
            .map_err(GitError::internal)?;
        Ok(found.map(|data| data.kind))
    }

    /// The bytes of blob `id`, which a tree names: its absence is a broken repository (an
    /// internal error), not a user's mistake.
    pub fn read_named_blob(&self, id: &gix::hash::oid) -> Result<Vec<u8>, GitError> {
        let mut data = Vec::new();
        self.read_object(id, &mut data)?
            .ok_or_else(|| GitError::internal_msg(format!("missing blob {id}")))?;
        Ok(data)
    }
}
