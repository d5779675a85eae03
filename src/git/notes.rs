//! Git notes, with or without fan-out directories: `refs/notes/commits` on commit pages,
//! `refs/notes/signatures/<format>` for snapshot signatures.

use gix::ObjectId;
use gix::bstr::ByteSlice;

/// The note attached to `commit` in the notes history at `notes_commit` (the tip of
/// `refs/notes/commits`, taken from the ref snapshot), if any.
pub fn note(repo: &gix::Repository, notes_commit: ObjectId, commit: ObjectId) -> Option<String> {
    let blob = repo
        .find_object(note_blob(repo, notes_commit, commit)?)
        .ok()?;
    Some(blob.data.to_str_lossy().into_owned())
}

/// The blob of the note attached to `object` in the notes history at `notes_commit`.
pub fn note_blob(
    repo: &gix::Repository,
    notes_commit: ObjectId,
    object: ObjectId,
) -> Option<ObjectId> {
    let tree = repo.find_commit(notes_commit).ok()?.tree().ok()?;
    let hex = object.to_string();
    for fanout in 0..=3 {
        let mut path = String::with_capacity(hex.len() + fanout);
        for level in 0..fanout {
            path.push_str(&hex[level * 2..level * 2 + 2]);
            path.push('/');
        }
        path.push_str(&hex[fanout * 2..]);
        if let Ok(Some(entry)) = tree.lookup_entry_by_path(&path) {
            return Some(entry.object_id());
        }
    }
    None
}
