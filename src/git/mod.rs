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
pub mod rev;
pub mod tree;

pub use commit::CommitInfo;
pub use error::GitError;
pub use log::LogPage;
