//! Recursive tree comparison in git's order (depth first, git's tree sort), limited to a path.

use crate::git::Repo;
use crate::git::error::GitError;
use gix::ObjectId;
use gix::bstr::BString;
use std::cmp::Ordering;
use std::sync::Arc;

const TREE_MODE: u32 = 0o040000;
const LINK_MODE: u32 = 0o120000;
const GITLINK_MODE: u32 = 0o160000;

/// One side of a file change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: BString,
    /// Canonical git mode, e.g. `0o100644`, `0o120000`, `0o160000`.
    pub mode: u32,
    pub id: ObjectId,
}

impl Entry {
    pub fn is_gitlink(&self) -> bool {
        self.mode == 0o160000
    }
}

/// A changed path: `old` absent for additions, `new` absent for deletions.
#[derive(Clone, Debug)]
pub struct RawChange {
    pub old: Option<Entry>,
    pub new: Option<Entry>,
}

/// Modes as git canonicalises them when reading trees (`100664` → `100644`).
fn canonical_mode(mode: u32) -> u32 {
    match mode & 0o170000 {
        TREE_MODE | LINK_MODE | GITLINK_MODE => mode & 0o170000,
        _ if mode & 0o100 != 0 => 0o100755,
        _ => 0o100644,
    }
}

/// An entry of a tree's bytes: where its name is in them, and where the next entry starts.
#[derive(Clone, Copy)]
struct TreeEntry {
    name: (usize, usize),
    mode: u32,
    id: ObjectId,
    next: usize,
}

impl TreeEntry {
    fn is_tree(&self) -> bool {
        self.mode == TREE_MODE
    }

    fn name<'d>(&self, data: &'d [u8]) -> &'d [u8] {
        &data[self.name.0..self.name.1]
    }

    /// The entry of `data` that starts at byte `at`; none past the last.
    fn at(data: &[u8], at: usize, hash: gix::hash::Kind) -> Result<Option<TreeEntry>, GitError> {
        let rest = data.get(at..).unwrap_or_default();
        let Some(e) = gix::objs::TreeRefIter::from_bytes(rest, hash).next() else {
            return Ok(None);
        };
        let e = e.map_err(GitError::internal)?;
        // (a valid entry is `<mode> <name>\0<id>`)
        let space = rest.iter().position(|&b| b == b' ').unwrap_or_default();
        let start = at + space + 1;
        let end = start + e.filename.len();
        Ok(Some(TreeEntry {
            name: (start, end),
            mode: canonical_mode(u32::from(e.mode.value())),
            id: e.oid.to_owned(),
            next: end + 1 + hash.len_in_bytes(),
        }))
    }
}

/// The bytes of tree `id` (none for the empty tree).
fn read_tree(repo: &Repo, id: Option<ObjectId>) -> Result<Arc<Vec<u8>>, GitError> {
    let Some(id) = id else {
        return Ok(Arc::default());
    };
    match repo.read_object(&id)? {
        Some((gix::object::Kind::Tree, data)) => Ok(data),
        _ => Err(GitError::internal_msg(format!("missing tree {id}"))),
    }
}

/// Which paths a diff is limited to: the path itself and everything below it.
struct Limit<'a>(Option<&'a [u8]>);

impl Limit<'_> {
    fn matches_file(&self, path: &[u8]) -> bool {
        match self.0 {
            None => true,
            Some(p) => path == p || (path.starts_with(p) && path.get(p.len()) == Some(&b'/')),
        }
    }

    /// Whether anything below directory `dir` can match.
    fn enters_dir(&self, dir: &[u8]) -> bool {
        match self.0 {
            None => true,
            Some(p) => {
                self.matches_file(dir) || (p.starts_with(dir) && p.get(dir.len()) == Some(&b'/'))
            }
        }
    }
}

/// Two trees being compared: the bytes of each side, where the next entry of each starts, and
/// the length of the path of the folder they are (the base of their entries' paths).
struct Level {
    old: Arc<Vec<u8>>,
    new: Arc<Vec<u8>>,
    old_at: usize,
    new_at: usize,
    base_len: usize,
}

impl Level {
    fn read(
        repo: &Repo,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        base_len: usize,
    ) -> Result<Level, GitError> {
        // (the new side first, like blobs: see `Differ::content`)
        let new = read_tree(repo, new)?;
        let old = read_tree(repo, old)?;
        Ok(Level {
            old,
            new,
            old_at: 0,
            new_at: 0,
            base_len,
        })
    }
}

/// Every changed file between two trees (`None`: the empty tree), in git's output order. Both
/// trees are walked in step, neither collected (most entries are the same), depth first with a
/// stack of the folders entered instead of recursion: a tree nested ten thousand levels deep
/// must not overflow a worker's stack.
pub fn changes(
    repo: &Repo,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    limit: Option<&[u8]>,
) -> Result<Vec<RawChange>, GitError> {
    let limit = Limit(limit);
    let hash = repo.object_hash();
    let mut out = Vec::new();
    let mut base = Vec::new();
    let mut stack = vec![Level::read(repo, old, new, 0)?];
    while let Some(level) = stack.last_mut() {
        base.truncate(level.base_len);
        let a = TreeEntry::at(&level.old, level.old_at, hash)?;
        let b = TreeEntry::at(&level.new, level.new_at, hash)?;
        let (old, new, name) = match (a, b) {
            (None, None) => {
                stack.pop();
                continue;
            }
            (Some(a), None) => (Some(a), None, a.name(&level.old)),
            (None, Some(b)) => (None, Some(b), b.name(&level.new)),
            (Some(a), Some(b)) => {
                let (a_name, b_name) = (a.name(&level.old), b.name(&level.new));
                match gix::objs::tree::name_order(a_name, a.is_tree(), b_name, b.is_tree()) {
                    Ordering::Less => (Some(a), None, a_name),
                    Ordering::Greater => (None, Some(b), b_name),
                    Ordering::Equal => (Some(a), Some(b), a_name),
                }
            }
        };
        if let Some(a) = old {
            level.old_at = a.next;
        }
        if let Some(b) = new {
            level.new_at = b.next;
        }
        if let (Some(a), Some(b)) = (old, new)
            && a.id == b.id
            && a.mode == b.mode
        {
            continue;
        }
        // One entry present on one or both sides under the same name and kind.
        if !base.is_empty() {
            base.push(b'/');
        }
        base.extend_from_slice(name);
        if old.or(new).is_some_and(|e| e.is_tree()) {
            if limit.enters_dir(&base) {
                let entered = Level::read(repo, old.map(|e| e.id), new.map(|e| e.id), base.len())?;
                stack.push(entered);
            }
        } else if limit.matches_file(&base) {
            let side = |e: TreeEntry| Entry {
                path: base.clone().into(),
                mode: e.mode,
                id: e.id,
            };
            out.push(RawChange {
                old: old.map(side),
                new: new.map(side),
            });
        }
    }
    Ok(out)
}
