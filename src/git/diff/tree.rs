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

/// An entry of a tree, its name borrowed from the tree's bytes.
struct TreeEntry<'d> {
    name: &'d [u8],
    mode: u32,
    id: ObjectId,
}

impl TreeEntry<'_> {
    fn is_tree(&self) -> bool {
        self.mode == TREE_MODE
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

/// The entries of a tree's bytes, in the tree's order.
struct TreeEntries<'d>(gix::objs::TreeRefIter<'d>);

impl<'d> TreeEntries<'d> {
    fn new(data: &'d [u8], hash: gix::hash::Kind) -> Self {
        TreeEntries(gix::objs::TreeRefIter::from_bytes(data, hash))
    }

    fn next(&mut self) -> Result<Option<TreeEntry<'d>>, GitError> {
        let Some(e) = self.0.next() else {
            return Ok(None);
        };
        let e = e.map_err(GitError::internal)?;
        Ok(Some(TreeEntry {
            name: e.filename.as_ref(),
            mode: canonical_mode(u32::from(e.mode.value())),
            id: e.oid.to_owned(),
        }))
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

/// Every changed file between two trees (`None`: the empty tree), in git's output order.
pub fn changes(
    repo: &Repo,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    limit: Option<&[u8]>,
) -> Result<Vec<RawChange>, GitError> {
    let mut out = Vec::new();
    let mut walk = Walk {
        repo,
        limit: Limit(limit),
        out: &mut out,
    };
    walk.trees(&mut Vec::new(), old, new)?;
    Ok(out)
}

struct Walk<'a> {
    repo: &'a Repo<'a>,
    limit: Limit<'a>,
    out: &'a mut Vec<RawChange>,
}

impl Walk<'_> {
    fn trees(
        &mut self,
        base: &mut Vec<u8>,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
    ) -> Result<(), GitError> {
        // (the new side first, like blobs: see `Differ::content`)
        let new_data = read_tree(self.repo, new)?;
        let old_data = read_tree(self.repo, old)?;
        let hash = self.repo.object_hash();
        // (both trees are walked in step, neither collected: most entries are the same)
        let mut new_entries = TreeEntries::new(&new_data, hash);
        let mut old_entries = TreeEntries::new(&old_data, hash);
        let (mut a, mut b) = (old_entries.next()?, new_entries.next()?);
        loop {
            let order = match (&a, &b) {
                (Some(a), Some(b)) => {
                    gix::objs::tree::name_order(a.name, a.is_tree(), b.name, b.is_tree())
                }
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => return Ok(()),
            };
            match order {
                Ordering::Less => {
                    self.entry(base, a.as_ref(), None)?;
                    a = old_entries.next()?;
                }
                Ordering::Greater => {
                    self.entry(base, None, b.as_ref())?;
                    b = new_entries.next()?;
                }
                Ordering::Equal => {
                    if let (Some(old), Some(new)) = (&a, &b)
                        && (old.id != new.id || old.mode != new.mode)
                    {
                        self.entry(base, a.as_ref(), b.as_ref())?;
                    }
                    a = old_entries.next()?;
                    b = new_entries.next()?;
                }
            }
        }
    }

    /// One entry present on one or both sides under the same name and kind.
    fn entry(
        &mut self,
        base: &mut Vec<u8>,
        old: Option<&TreeEntry>,
        new: Option<&TreeEntry>,
    ) -> Result<(), GitError> {
        let name = old.or(new).map(|e| e.name).unwrap_or_default();
        let len = base.len();
        if len > 0 {
            base.push(b'/');
        }
        base.extend_from_slice(name);
        let is_tree = old.or(new).is_some_and(TreeEntry::is_tree);
        let result = if is_tree {
            if self.limit.enters_dir(base) {
                self.trees(base, old.map(|e| e.id), new.map(|e| e.id))
            } else {
                Ok(())
            }
        } else {
            if self.limit.matches_file(base) {
                let side = |e: &TreeEntry| Entry {
                    path: base.clone().into(),
                    mode: e.mode,
                    id: e.id,
                };
                self.out.push(RawChange {
                    old: old.map(side),
                    new: new.map(side),
                });
            }
            Ok(())
        };
        base.truncate(len);
        result
    }
}
