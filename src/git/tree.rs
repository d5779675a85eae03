//! Trees and blobs: entries at a path, directory listings with sizes, bounded blob reads.

use super::Repo;
use super::error::GitError;
use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryMode;
use std::sync::Arc;

/// One entry of a tree.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: BString,
    pub mode: EntryMode,
    pub id: ObjectId,
}

/// What a path in a tree names.
#[derive(Clone, Debug)]
pub enum Found {
    Tree(ObjectId),
    Blob { id: ObjectId, mode: EntryMode },
    Submodule(ObjectId),
}

/// Splits a URL path into non-empty components.
pub fn components(path: &BStr) -> impl DoubleEndedIterator<Item = &BStr> {
    path.split(|b| *b == b'/')
        .filter(|c| !c.is_empty())
        .map(|c| c.as_bstr())
}

/// The tree entry at `path` below `tree` (no entry for the root itself).
/// This is the hot function of path-limited history walks.
pub fn entry_at(
    repo: &Repo,
    tree: ObjectId,
    path: &BStr,
) -> Result<Option<(ObjectId, EntryMode)>, GitError> {
    let mut current = tree;
    let mut parts = components(path).peekable();
    while let Some(name) = parts.next() {
        let data = read_tree(repo, &current)
            .map_err(|_| GitError::internal_msg(format!("missing tree {current}")))?;
        let mut found = None;
        for entry in tree_entries(repo, &data) {
            let entry = entry.map_err(GitError::internal)?;
            if entry.filename == name {
                found = Some((entry.oid.to_owned(), entry.mode));
                break;
            }
        }
        let Some((id, mode)) = found else {
            return Ok(None);
        };
        if parts.peek().is_none() {
            return Ok(Some((id, mode)));
        }
        if !mode.is_tree() {
            return Ok(None);
        }
        current = id;
    }
    Ok(None)
}

/// Resolves `path` (empty: the root) in `tree`.
pub fn find(repo: &Repo, tree: ObjectId, path: &BStr) -> Result<Option<Found>, GitError> {
    if components(path).next().is_none() {
        return Ok(Some(Found::Tree(tree)));
    }
    Ok(entry_at(repo, tree, path)?.map(|(id, mode)| {
        if mode.is_tree() {
            Found::Tree(id)
        } else if mode.is_commit() {
            Found::Submodule(id)
        } else {
            Found::Blob { id, mode }
        }
    }))
}

/// The entries of a tree in git's order.
pub fn entries(repo: &Repo, tree: ObjectId) -> Result<Vec<Entry>, GitError> {
    let data = read_tree(repo, &tree)?;
    tree_entries(repo, &data)
        .map(|e| {
            let e = e.map_err(GitError::internal)?;
            Ok(Entry {
                name: e.filename.to_owned(),
                mode: e.mode,
                id: e.oid.to_owned(),
            })
        })
        .collect()
}

/// The kind of an object, without reading it.
pub fn object_kind(repo: &gix::Repository, id: ObjectId) -> Option<gix::object::Kind> {
    repo.find_header(id).ok().map(|h| h.kind())
}

/// The names of a chain of directories that each hold exactly one directory (cgit shows
/// `a / b / c` as one row), starting below `tree`. Bounded to `max` links. Each tree is only
/// walked to its second entry, and nothing of it is kept but a chain link.
pub fn single_child_chain(repo: &Repo, tree: ObjectId, max: usize) -> Result<Vec<Entry>, GitError> {
    let mut chain = Vec::new();
    let mut current = tree;
    while chain.len() < max {
        let Some(child) = only_subdirectory(repo, current)? else {
            break;
        };
        current = child.id;
        chain.push(child);
    }
    Ok(chain)
}

/// The entry of a tree that holds one entry, a directory, and nothing else.
fn only_subdirectory(repo: &Repo, tree: ObjectId) -> Result<Option<Entry>, GitError> {
    let data = read_tree(repo, &tree)?;
    let mut iter = tree_entries(repo, &data);
    let first = match iter.next() {
        Some(entry) => entry.map_err(GitError::internal)?,
        None => return Ok(None),
    };
    if !first.mode.is_tree() || iter.next().is_some() {
        return Ok(None);
    }
    Ok(Some(Entry {
        name: first.filename.to_owned(),
        mode: first.mode,
        id: first.oid.to_owned(),
    }))
}

/// The bytes of tree `id`, which a commit or a tree names (shared with the pack reader's
/// caches): its absence, like an unreadable object, is a broken repository.
fn read_tree(repo: &Repo, id: &gix::hash::oid) -> Result<Arc<Vec<u8>>, GitError> {
    match repo.read_object(id)? {
        Some((gix::object::Kind::Tree, data)) => Ok(data),
        Some(_) => Err(GitError::NotFound(format!("Bad tree: {id}"))),
        None => Err(GitError::internal_msg(format!("missing tree {id}"))),
    }
}

/// The entries of a tree's bytes, in order.
fn tree_entries<'b>(repo: &Repo, data: &'b [u8]) -> gix::objs::TreeRefIter<'b> {
    gix::objs::TreeRefIter::from_bytes(data, repo.object_hash())
}

/// A blob's bytes, possibly only its beginning.
pub struct Blob {
    pub data: Vec<u8>,
    /// The whole blob's size.
    pub size: u64,
}

/// Reads a whole blob, which a tree names: its absence, like an unreadable object, is a broken
/// repository.
pub fn read_blob(repo: &Repo, id: ObjectId) -> Result<Blob, GitError> {
    let data = match repo.read_object(&id)? {
        Some((gix::object::Kind::Blob, data)) => data,
        Some(_) => return Err(GitError::NotFound(format!("Not a blob: {id}"))),
        None => return Err(GitError::internal_msg(format!("missing blob {id}"))),
    };
    let data = Arc::unwrap_or_clone(data);
    let size = data.len() as u64;
    Ok(Blob { data, size })
}

/// Whether bytes look binary the way git decides it: a NUL in the first 8000 bytes.
pub fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(8000)].contains(&0)
}
