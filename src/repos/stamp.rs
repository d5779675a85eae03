//! Cheap ref-change detection: file and directory stats of HEAD, packed-refs and refs/.

use super::RepoError;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What the ref storage looked like at one moment; equal stamps mean unchanged refs.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct RefStamp {
    entries: Vec<(u64, i64, i64, u64)>,
}

impl RefStamp {
    /// Stats HEAD, packed-refs and every directory below refs/ (a loose ref written, renamed
    /// into place or deleted changes its directory's mtime). A missing HEAD means the
    /// repository is gone.
    pub(super) fn read(git_dir: &Path) -> Result<RefStamp, RepoError> {
        let head = fs::metadata(git_dir.join("HEAD")).map_err(|e| RepoError::Vanished {
            path: git_dir.to_path_buf(),
            source: std::sync::Arc::new(e),
        })?;
        let mut entries = vec![key(&head)];
        entries.push(fs::metadata(git_dir.join("packed-refs")).map_or((0, 0, 0, 0), |m| key(&m)));
        collect_dirs(&git_dir.join("refs"), &mut entries);
        Ok(RefStamp { entries })
    }
}

fn key(m: &fs::Metadata) -> (u64, i64, i64, u64) {
    (m.ino(), m.mtime(), m.mtime_nsec(), m.size())
}

fn collect_dirs(dir: &Path, out: &mut Vec<(u64, i64, i64, u64)>) {
    let Ok(meta) = fs::metadata(dir) else {
        return;
    };
    out.push(key(&meta));
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&entry.path(), out);
        }
    }
}
