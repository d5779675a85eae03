//! Cheap ref-change detection: file and directory stats of HEAD, packed-refs and refs/.
//!
//! A stat only proves that nothing changed if a later change would have to show in it. A file
//! written in the same timestamp tick as the stat (or, with a coarse clock or a filesystem of
//! one-second timestamps, up to a second later) can keep the mtime and size the stat saw, so a
//! stamp with an entry that recent is *racy*, as git calls it: it is not trusted, and the refs
//! are read again on a later check until the stamp is old enough to be believed.

use super::RepoError;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

/// How far before the moment of the stat an mtime still counts as "the same tick": a whole
/// second, for filesystems with second timestamps and kernels whose file clock lags.
const RACY_SECONDS: i64 = 1;

/// What the ref storage looked like at one moment; equal stamps mean unchanged refs, unless
/// the earlier one [`is_racy`](RefStamp::is_racy).
#[derive(Debug)]
pub(super) struct RefStamp {
    entries: Vec<(u64, i64, i64, u64)>,
    racy: bool,
    /// Whether some file (a loose ref) was found below refs/.
    loose: bool,
}

impl PartialEq for RefStamp {
    fn eq(&self, other: &RefStamp) -> bool {
        self.entries == other.entries
    }
}

impl RefStamp {
    /// Stats HEAD, packed-refs and every directory below refs/ (a loose ref written, renamed
    /// into place or deleted changes its directory's mtime). A missing HEAD means the
    /// repository is gone.
    pub(super) fn read(git_dir: &Path) -> Result<RefStamp, RepoError> {
        let taken = unix_seconds(SystemTime::now());
        let head = fs::metadata(git_dir.join("HEAD")).map_err(|e| RepoError::Vanished {
            path: git_dir.to_path_buf(),
            source: std::sync::Arc::new(e),
        })?;
        let mut entries = vec![key(&head)];
        entries.push(fs::metadata(git_dir.join("packed-refs")).map_or((0, 0, 0, 0), |m| key(&m)));
        let mut loose = false;
        collect_dirs(&git_dir.join("refs"), &mut entries, &mut loose);
        let racy = entries
            .iter()
            .any(|&(_, mtime, _, _)| mtime >= taken - RACY_SECONDS);
        Ok(RefStamp {
            entries,
            racy,
            loose,
        })
    }

    /// Whether the refs are all in `HEAD` and `packed-refs` (no loose ref was found): then
    /// those two files' bytes say everything about them.
    pub(super) fn all_packed(&self) -> bool {
        !self.loose
    }

    /// Whether something in the stamp changed so close to the moment it was taken that a change
    /// right after could look the same: then an equal later stamp proves nothing.
    pub(super) fn is_racy(&self) -> bool {
        self.racy
    }
}

fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

fn key(m: &fs::Metadata) -> (u64, i64, i64, u64) {
    (m.ino(), m.mtime(), m.mtime_nsec(), m.size())
}

fn collect_dirs(dir: &Path, out: &mut Vec<(u64, i64, i64, u64)>, loose: &mut bool) {
    let Ok(meta) = fs::metadata(dir) else {
        return;
    };
    out.push(key(&meta));
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&entry.path(), out, loose);
        } else {
            *loose = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_entries_make_a_stamp_racy_and_old_ones_do_not() {
        let dir = std::env::temp_dir().join(format!("cgitd-stamp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("refs/heads")).unwrap();
        fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(RefStamp::read(&dir).unwrap().is_racy());
        let old = SystemTime::now() - std::time::Duration::from_secs(10);
        for p in ["HEAD", "refs", "refs/heads"] {
            fs::File::options()
                .read(true)
                .open(dir.join(p))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        assert!(!RefStamp::read(&dir).unwrap().is_racy());
        fs::remove_dir_all(&dir).unwrap();
    }
}
