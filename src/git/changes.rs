//! Per-commit change counts for the log's Files and Lines columns: a tree diff against the
//! first parent, and optionally a line diff of each changed blob.

use super::error::GitError;
use super::tree::is_binary;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use gix::diff::blob::{Algorithm, Diff, InternedInput};
use gix::diff::tree::recorder::Change;
use gix::objs::TreeRefIter;
use gix::objs::tree::EntryMode;

/// How much a commit changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeCount {
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

/// Reusable buffers for counting many commits.
#[derive(Default)]
pub struct Counter {
    state: gix::diff::tree::State,
}

impl Counter {
    /// Counts the files (and with `lines`, the lines) changed between the first parent's tree
    /// (empty for a root commit) and `tree`, limited to `path` when given.
    pub fn count(
        &mut self,
        repo: &gix::Repository,
        tree: ObjectId,
        first_parent: Option<ObjectId>,
        path: Option<&BStr>,
        lines: bool,
    ) -> Result<ChangeCount, GitError> {
        let old_tree = match first_parent {
            Some(parent) => Some(
                repo.find_commit(parent)
                    .and_then(|c| c.tree_id())
                    .map_err(GitError::internal)?
                    .detach(),
            ),
            None => None,
        };
        let old = tree_data(repo, old_tree)?;
        let new = tree_data(repo, Some(tree))?;
        let kind = repo.object_hash();
        let mut recorder = gix::diff::tree::Recorder::default();
        gix::diff::tree(
            TreeRefIter::from_bytes(&old, kind),
            TreeRefIter::from_bytes(&new, kind),
            &mut self.state,
            &repo.objects,
            &mut recorder,
        )
        .map_err(GitError::internal)?;
        let mut count = ChangeCount::default();
        for change in &recorder.records {
            let (mode, change_path) = match change {
                Change::Addition {
                    entry_mode, path, ..
                }
                | Change::Deletion {
                    entry_mode, path, ..
                }
                | Change::Modification {
                    entry_mode, path, ..
                } => (*entry_mode, path.as_bstr()),
            };
            if mode.is_tree() || !within(change_path, path) {
                continue;
            }
            count.files += 1;
            if lines {
                let (added, removed) = line_counts(repo, change)?;
                count.added += added;
                count.removed += removed;
            }
        }
        Ok(count)
    }
}

fn tree_data(repo: &gix::Repository, tree: Option<ObjectId>) -> Result<Vec<u8>, GitError> {
    match tree {
        Some(id) => Ok(repo
            .find_tree(id)
            .map_err(GitError::internal)?
            .detach()
            .data),
        None => Ok(Vec::new()),
    }
}

/// Whether `file` is `prefix` or below it.
fn within(file: &BStr, prefix: Option<&BStr>) -> bool {
    let Some(prefix) = prefix else { return true };
    let prefix = prefix.trim_end_with(|c| c == '/');
    file.starts_with(prefix) && (file.len() == prefix.len() || file[prefix.len()] == b'/')
}

/// Lines added and removed by one file change (binary files count none).
fn line_counts(repo: &gix::Repository, change: &Change) -> Result<(usize, usize), GitError> {
    Ok(match change {
        Change::Addition {
            entry_mode, oid, ..
        } => (lines_of(repo, *entry_mode, *oid)?, 0),
        Change::Deletion {
            entry_mode, oid, ..
        } => (0, lines_of(repo, *entry_mode, *oid)?),
        Change::Modification {
            previous_entry_mode,
            previous_oid,
            entry_mode,
            oid,
            ..
        } => {
            if previous_entry_mode.is_commit() || entry_mode.is_commit() {
                return Ok((1, 1));
            }
            let old = blob(repo, *previous_oid)?;
            let new = blob(repo, *oid)?;
            if is_binary(&old) || is_binary(&new) {
                return Ok((0, 0));
            }
            let input = InternedInput::new(old.as_slice(), new.as_slice());
            let diff = Diff::compute(Algorithm::Myers, &input);
            (
                diff.count_additions() as usize,
                diff.count_removals() as usize,
            )
        }
    })
}

fn lines_of(repo: &gix::Repository, mode: EntryMode, id: ObjectId) -> Result<usize, GitError> {
    if mode.is_commit() {
        return Ok(1);
    }
    let data = blob(repo, id)?;
    if is_binary(&data) {
        return Ok(0);
    }
    let newlines = data.iter().filter(|b| **b == b'\n').count();
    Ok(newlines + usize::from(data.last().is_some_and(|b| *b != b'\n')))
}

fn blob(repo: &gix::Repository, id: ObjectId) -> Result<Vec<u8>, GitError> {
    Ok(repo
        .find_object(id)
        .map_err(GitError::internal)?
        .detach()
        .data)
}
