//! Blame: which commit last changed each line of a file, as groups of consecutive lines, within
//! a wall-clock budget. The result is a pure function of (commit id, path), so it has a compact
//! text form that callers may cache.

use super::Repo;
use super::error::GitError;
use super::tree::entry_at;
use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// Consecutive lines of the blamed file that come from one commit.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub commit: ObjectId,
    pub lines: usize,
    /// The commit's first parent and the file's path there, when the file existed in it
    /// (cgit's "blame the previous revision" link).
    pub previous: Option<(ObjectId, BString)>,
}

/// What a blame run gave.
pub enum Outcome {
    Done(Vec<Group>),
    /// The budget ran out first.
    TimedOut,
}

/// Blames `path` at `commit`, giving up after `budget`.
pub fn blame(
    repo: &Repo,
    commit: ObjectId,
    path: &BStr,
    budget: Duration,
) -> Result<Outcome, GitError> {
    let odb = Deadline {
        repo,
        until: Instant::now() + budget,
        expired: Cell::new(false),
    };
    let graph = repo.commit_graph_if_enabled().ok().flatten();
    let mut resources = blob_resources(repo)?;
    let options = gix::blame::Options {
        diff_algorithm: repo.diff_algorithm().map_err(GitError::internal)?,
        ranges: gix::blame::BlameRanges::default(),
        since: None,
        rewrites: Some(gix::diff::Rewrites::default()),
        debug_track_path: false,
    };
    let result = gix::blame::file(
        &odb,
        gix::blame::Start::Commit(commit),
        graph,
        &mut resources,
        path,
        options,
    );
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(_) if odb.expired.get() => return Ok(Outcome::TimedOut),
        Err(e) => return Err(GitError::internal(e)),
    };
    let mut groups: Vec<Group> = Vec::new();
    for entry in outcome.entries {
        let lines = entry.len.get() as usize;
        match groups.last_mut() {
            Some(last) if last.commit == entry.commit_id => last.lines += lines,
            _ => {
                let source = entry
                    .source_file_name
                    .as_ref()
                    .map_or(path, |p| p.as_bstr());
                groups.push(Group {
                    commit: entry.commit_id,
                    lines,
                    previous: previous(repo, entry.commit_id, source)?,
                });
            }
        }
    }
    Ok(Outcome::Done(groups))
}

/// gix's resources for diffing blobs of trees, with the attributes of the repository and the
/// host but not of HEAD's tree: gix would read all of HEAD's trees for its `.gitattributes`
/// files first (a sixth of a blame's time in a linux-sized tree), and blame reads no driver.
fn blob_resources(repo: &Repo) -> Result<gix::diff::blob::Platform, GitError> {
    use gix::diff::blob::pipeline::{Mode, WorktreeRoots};
    use gix::worktree::stack::state::attributes::Source;
    let no_index = gix::index::State::new(repo.object_hash());
    let attributes = repo
        .attributes_only(&no_index, Source::IdMapping)
        .map_err(GitError::internal)?
        .detach();
    gix::diff::resource_cache(repo, Mode::ToGit, attributes, WorktreeRoots::default())
        .map_err(GitError::internal)
}

/// The first parent of `commit` with the path there, if the path exists in it.
fn previous(
    repo: &Repo,
    commit: ObjectId,
    path: &BStr,
) -> Result<Option<(ObjectId, BString)>, GitError> {
    let info = super::commit::read_commit(repo, commit)?;
    let Some(parent) = info.parents.first().copied() else {
        return Ok(None);
    };
    let tree = super::commit::read_commit(repo, parent)?.tree;
    let found = entry_at(repo, tree, path)?;
    Ok(found.map(|_| (parent, path.to_owned())))
}

/// The repository's objects, read through the shared pack reader (whose kept delta bases make
/// the trees of old commits cheap), failing every lookup once the deadline has passed, so that
/// a blame (which cannot be interrupted otherwise) ends in time.
struct Deadline<'a> {
    repo: &'a Repo<'a>,
    until: Instant,
    expired: Cell<bool>,
}

impl Deadline<'_> {
    fn check(&self) -> Result<(), gix::Error> {
        if self.expired.get() || Instant::now() > self.until {
            self.expired.set(true);
            return Err(gix::error::message("blame time budget exhausted").into());
        }
        Ok(())
    }
}

impl gix::objs::Find for Deadline<'_> {
    fn try_find<'a>(
        &self,
        id: &gix::oid,
        buffer: &'a mut Vec<u8>,
    ) -> Result<Option<gix::objs::Data<'a>>, gix::Error> {
        self.check()?;
        let Some((kind, data)) = self.repo.read_object(id).map_err(gix::Error::from_error)? else {
            return Ok(None);
        };
        buffer.clear();
        buffer.extend_from_slice(&data);
        Ok(Some(gix::objs::Data::new(
            buffer,
            kind,
            self.repo.object_hash(),
        )))
    }
}

impl gix::objs::FindHeader for Deadline<'_> {
    fn try_header(&self, id: &gix::oid) -> Result<Option<gix::objs::Header>, gix::Error> {
        self.check()?;
        // Read whole: what blame asks the header of it reads next, from the reader's cache.
        let found = self.repo.read_object(id).map_err(gix::Error::from_error)?;
        Ok(found.map(|(kind, data)| gix::objs::Header {
            kind,
            size: data.len() as u64,
        }))
    }
}

/// The text form of groups: one line each, `<commit> <lines> <parent|-> <hex of path>`.
pub fn encode(groups: &[Group]) -> String {
    let mut out = String::with_capacity(groups.len() * 100);
    for g in groups {
        let (parent, path) = match &g.previous {
            Some((p, path)) => (p.to_string(), hex(path)),
            None => ("-".into(), String::new()),
        };
        out.push_str(&format!("{} {} {parent} {path}\n", g.commit, g.lines));
    }
    out
}

/// Groups from their text form; `None` if it is not one.
pub fn decode(text: &str) -> Option<Vec<Group>> {
    text.lines()
        .map(|line| {
            let mut fields = line.split(' ');
            let commit = ObjectId::from_hex(fields.next()?.as_bytes()).ok()?;
            let lines = fields.next()?.parse().ok()?;
            let previous = match fields.next()? {
                "-" => None,
                p => Some((
                    ObjectId::from_hex(p.as_bytes()).ok()?,
                    unhex(fields.next()?)?.into(),
                )),
            };
            Some(Group {
                commit,
                lines,
                previous,
            })
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        let a = ObjectId::from_hex(b"0123456789012345678901234567890123456789").unwrap();
        let b = ObjectId::from_hex(b"abcdefabcdefabcdefabcdefabcdefabcdefabcd").unwrap();
        let groups = vec![
            Group {
                commit: a,
                lines: 3,
                previous: None,
            },
            Group {
                commit: b,
                lines: 1,
                previous: Some((a, "dir/a b\n.txt".into())),
            },
        ];
        assert_eq!(decode(&encode(&groups)).unwrap(), groups);
        assert_eq!(decode("").unwrap(), Vec::new());
        assert!(decode("nothex 1 -").is_none());
    }
}
