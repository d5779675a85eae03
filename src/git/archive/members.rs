//! An archive's members: what to archive, and the walk over a commit's tree that yields every
//! member in git-archive's order.

use gix::ObjectId;
use gix::bstr::BString;
use gix::object::tree::EntryKind;
use std::io;

/// What to archive: a commit's tree, the commit time and the directory every entry is below.
pub struct Archive {
    pub commit: ObjectId,
    pub tree: ObjectId,
    /// Seconds since the epoch, for every entry.
    pub mtime: i64,
    /// One directory name, without `/`; the caller makes sure it is a safe name.
    pub prefix: String,
}

/// One archive member.
pub struct Entry<'a> {
    /// Full member name, below the prefix; directories end with `/`.
    pub path: &'a [u8],
    pub kind: MemberKind,
    /// The tree, blob or submodule commit the member comes from (git names pax headers by it).
    pub id: ObjectId,
    /// File content or symlink target.
    pub data: &'a [u8],
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Directory,
    File,
    Executable,
    Symlink,
}

/// A tree entry, owned so that the walk can hold several trees at once.
struct TreeEntry {
    name: BString,
    kind: EntryKind,
    id: ObjectId,
}

/// Calls `visit` for the prefix directory and then every entry of the tree, depth first in tree
/// order (a directory before its contents), as git-archive does. Entry names that could leave
/// their directory (`..`, `/`, empty) are never emitted; such trees only come from corrupt or
/// hostile repositories.
pub fn walk(
    repo: &gix::Repository,
    archive: &Archive,
    visit: &mut dyn FnMut(Entry<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut path: Vec<u8> = format!("{}/", archive.prefix).into_bytes();
    visit(Entry {
        path: &path,
        kind: MemberKind::Directory,
        id: archive.tree,
        data: &[],
    })?;
    let mut stack = vec![(read_tree(repo, archive.tree)?, 0, path.len())];
    while let Some((entries, next, base)) = stack.last_mut() {
        let Some(entry) = entries.get(*next) else {
            stack.pop();
            continue;
        };
        *next += 1;
        path.truncate(*base);
        path.extend_from_slice(&entry.name);
        let (kind, id) = (entry.kind, entry.id);
        match kind {
            EntryKind::Tree | EntryKind::Commit => {
                path.push(b'/');
                visit(Entry {
                    path: &path,
                    kind: MemberKind::Directory,
                    id,
                    data: &[],
                })?;
                if kind == EntryKind::Tree {
                    stack.push((read_tree(repo, id)?, 0, path.len()));
                }
            }
            EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                let blob = repo.find_blob(id).map_err(io::Error::other)?;
                let kind = match kind {
                    EntryKind::Link => MemberKind::Symlink,
                    EntryKind::BlobExecutable => MemberKind::Executable,
                    _ => MemberKind::File,
                };
                visit(Entry {
                    path: &path,
                    kind,
                    id,
                    data: &blob.data,
                })?;
            }
        }
    }
    Ok(())
}

fn read_tree(repo: &gix::Repository, id: ObjectId) -> io::Result<Vec<TreeEntry>> {
    let tree = repo.find_tree(id).map_err(io::Error::other)?;
    let decoded = tree.decode().map_err(io::Error::other)?;
    Ok(decoded
        .entries
        .iter()
        .filter(|e| is_safe_name(e.filename))
        .map(|e| TreeEntry {
            name: e.filename.to_owned(),
            kind: e.mode.kind(),
            id: e.oid.to_owned(),
        })
        .collect())
}

fn is_safe_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_tree_names_are_refused() {
        for bad in [&b""[..], b".", b"..", b"a/b", b"/", b"a\0"] {
            assert!(!is_safe_name(bad), "{bad:?}");
        }
        assert!(is_safe_name(b"..."));
        assert!(is_safe_name(b".gitignore"));
    }
}
