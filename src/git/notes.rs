//! Git notes of commits (`refs/notes/commits`), with or without fan-out directories.

use gix::ObjectId;
use gix::bstr::ByteSlice;

/// The note attached to `commit` in the notes history at `notes_commit` (the tip of
/// `refs/notes/commits`, taken from the ref snapshot), if any.
pub fn note(repo: &gix::Repository, notes_commit: ObjectId, commit: ObjectId) -> Option<String> {
    let tree = repo.find_commit(notes_commit).ok()?.tree().ok()?;
    let hex = commit.to_string();
    for fanout in 0..=3 {
        let mut path = String::with_capacity(hex.len() + fanout);
        for level in 0..fanout {
            path.push_str(&hex[level * 2..level * 2 + 2]);
            path.push('/');
        }
        path.push_str(&hex[fanout * 2..]);
        if let Ok(Some(entry)) = tree.lookup_entry_by_path(&path) {
            let blob = repo.find_object(entry.object_id()).ok()?;
            return Some(blob.data.to_str_lossy().into_owned());
        }
    }
    None
}
