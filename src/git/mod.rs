//! Read-only git queries over gix, returning plain data: no HTML, no HTTP.

pub mod archive;
pub mod blame;
pub mod changes;
pub mod commit;
pub mod commit_graph;
pub mod diff;
pub mod encoding;
pub mod files;
pub mod format_patch;
pub mod log;
pub mod notes;
pub mod rev;
pub mod tree;

pub use commit::CommitInfo;
pub use log::LogPage;

/// Why a git query failed.
#[derive(Debug)]
pub enum GitError {
    /// The client named something that does not exist (unknown revision, path, object).
    NotFound(String),
    /// The client's input can never be valid (bad hex, option-like revision).
    BadRequest(String),
    /// The repository could not answer (corrupt or unreadable objects).
    Internal(String),
}

impl GitError {
    pub fn internal(e: impl std::fmt::Display) -> GitError {
        GitError::Internal(e.to_string())
    }
}
