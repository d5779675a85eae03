//! Files below one directory served as they are (a git directory for dumb-HTTP clones, the
//! static directory): a path is checked first, then opened one component at a time without
//! following symbolic links, so nothing outside the directory is ever read, whatever is planted
//! inside it.

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, openat, statat};
use rustix::io::Errno;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;

/// Why a file could not be served.
#[derive(Debug)]
pub enum FileError {
    /// The path has characters or components that are never served.
    BadPath,
    NotFound,
    /// Unreadable, or a symbolic link on the way.
    Forbidden,
    Internal(String),
}

impl From<Errno> for FileError {
    fn from(e: Errno) -> Self {
        match e {
            Errno::NOENT | Errno::NOTDIR | Errno::ISDIR => FileError::NotFound,
            // ELOOP: a symbolic link met with O_NOFOLLOW.
            Errno::ACCESS | Errno::PERM | Errno::LOOP => FileError::Forbidden,
            e => FileError::Internal(e.to_string()),
        }
    }
}

/// The components of a relative path made only of `[A-Za-z0-9._-]` names joined by `/`, with
/// no empty, `.` or `..` component.
pub fn checked_components(path: &[u8]) -> Result<Vec<&str>, FileError> {
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || b"/._-".contains(b);
    if path.is_empty() || !path.iter().all(allowed) {
        return Err(FileError::BadPath);
    }
    let text = std::str::from_utf8(path).map_err(|_| FileError::BadPath)?;
    let parts: Vec<&str> = text.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(FileError::BadPath);
    }
    Ok(parts)
}

/// Opens the regular file `rel` (already checked) below `git_dir`.
pub fn open_file(git_dir: &Path, rel: &[&str]) -> Result<File, FileError> {
    let (name, dirs) = rel.split_last().ok_or(FileError::BadPath)?;
    let dir = open_dir(git_dir, dirs)?;
    // O_NONBLOCK: a FIFO planted here must not hang the thread; no effect on regular files.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = File::from(openat(&dir, *name, flags, Mode::empty())?);
    let meta = file
        .metadata()
        .map_err(|e| FileError::Internal(e.to_string()))?;
    if !meta.is_file() {
        return Err(FileError::NotFound);
    }
    Ok(file)
}

/// Names in the directory `rel` below `git_dir` (without `.` and `..`), sorted.
pub fn list_names(git_dir: &Path, rel: &[&str]) -> Result<Vec<String>, FileError> {
    let dir = open_dir(git_dir, rel)?;
    let mut names = Vec::new();
    for entry in Dir::read_from(&dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Opens `git_dir` (as configured, links allowed) and then each of `rel` below it, refusing
/// symbolic links.
fn open_dir(git_dir: &Path, rel: &[&str]) -> Result<OwnedFd, FileError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(git_dir, flags, Mode::empty())?;
    for name in rel {
        dir = match openat(&dir, *name, flags | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(next) => next,
            // O_DIRECTORY reports a link as "not a directory"; say what it is.
            Err(Errno::NOTDIR) if is_symlink(&dir, name) => return Err(FileError::Forbidden),
            Err(e) => return Err(e.into()),
        };
    }
    Ok(dir)
}

fn is_symlink(dir: &OwnedFd, name: &str) -> bool {
    statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_restricted() {
        assert_eq!(
            checked_components(b"pack/pack-1.idx").unwrap(),
            ["pack", "pack-1.idx"]
        );
        for bad in [
            &b"../config"[..],
            b"pack/../../x",
            b"/etc/passwd",
            b"a//b",
            b"./a",
            b"a b",
            b"a%2f",
            b"",
            b"\xff",
        ] {
            assert!(
                matches!(checked_components(bad), Err(FileError::BadPath)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn symlinks_are_never_followed() {
        let dir = std::env::temp_dir().join(format!("cgitd-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("objects/real")).unwrap();
        std::fs::write(dir.join("objects/real/file"), "ok").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("objects/link")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("objects/linkdir")).unwrap();
        let open = |p: &str| open_file(&dir, &checked_components(p.as_bytes()).unwrap());
        assert!(open("objects/real/file").is_ok());
        assert!(matches!(open("objects/link"), Err(FileError::Forbidden)));
        assert!(matches!(
            open("objects/linkdir/passwd"),
            Err(FileError::Forbidden)
        ));
        assert!(matches!(open("objects/real"), Err(FileError::NotFound)));
        assert!(matches!(open("objects/missing"), Err(FileError::NotFound)));
        assert_eq!(list_names(&dir, &["objects", "real"]).unwrap(), ["file"]);
        assert!(matches!(
            list_names(&dir, &["objects", "linkdir"]),
            Err(FileError::Forbidden)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
