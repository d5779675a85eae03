//! Diffs between two trees as plain data: changed files with git's rename detection, modes,
//! blob ids, binary flags and unified hunks, bounded in size. `patch` and `stat` write them in
//! git's own text formats.

mod binary;
mod blobs;
pub(crate) mod delta;
pub mod lines;
pub mod patch;
pub mod quote;
mod rename;
mod spans;
pub mod stat;
mod tree;

pub use binary::BinaryPatches;
pub use lines::{Hunk, Line, LineKind};
pub use tree::Entry;

use super::Repo;
use super::error::GitError;
use super::tree::is_binary;
use gix::ObjectId;
use gix::bstr::BString;

/// Options that change a diff's result (part of any cache key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DiffOptions {
    /// Context lines around changes.
    pub context: u32,
    /// Compare lines ignoring all whitespace (`git diff -w`).
    pub ignore_whitespace: bool,
    /// Rename detection limit: < 0 git's default (1000), 0 unlimited.
    pub rename_limit: i64,
}

/// The largest context accepted; larger requests are clamped.
pub const MAX_CONTEXT: u32 = 1000;

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            context: 3,
            ignore_whitespace: false,
            rename_limit: -1,
        }
    }
}

impl DiffOptions {
    /// Options from cgit's `context` parameter (absent, or out of range, as cgit treats them).
    pub fn with_context(context: Option<i64>) -> Self {
        let context = match context {
            Some(c) if c >= 0 => c.min(i64::from(MAX_CONTEXT)) as u32,
            _ => 3,
        };
        DiffOptions {
            context,
            ..DiffOptions::default()
        }
    }
}

/// How much a diff may produce before the remaining files are reported as too large.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Hunk lines over all files.
    pub max_lines: usize,
    /// Blob bytes read for line diffs over all files.
    pub max_bytes: u64,
    /// Blob bytes read, once the others are spent, only to count the changed lines of the
    /// files not shown (no hunks are built), so that the diffstat's counts stay exact.
    pub count_bytes: u64,
}

impl Limits {
    /// For HTML pages.
    pub const PAGE: Limits = Limits {
        max_lines: 10_000,
        max_bytes: 16 << 20,
        count_bytes: 128 << 20,
    };
    /// For raw diffs and patches.
    pub const RAW: Limits = Limits {
        max_lines: 2_000_000,
        max_bytes: 256 << 20,
        count_bytes: 256 << 20,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
    TypeChanged,
}

/// What changed inside a file.
#[derive(Clone, Debug)]
pub enum Content {
    /// Same blob on both sides (pure rename or mode change).
    Unchanged,
    /// Same binary blob on both sides: git's diffstat still says `Bin`.
    BinaryUnchanged {
        size: u64,
    },
    Binary {
        old_size: u64,
        new_size: u64,
    },
    /// Text hunks (none when only ignored whitespace changed).
    Text(Vec<Hunk>),
    /// A type change, shown as the old file deleted and the new one added.
    Replaced {
        old: Box<Content>,
        new: Box<Content>,
    },
    /// Over the size limits: no hunks (the counts may still be there: see
    /// [`FileDiff::counted`]).
    TooLarge,
}

/// One changed file.
#[derive(Clone, Debug)]
pub struct FileDiff {
    pub status: Status,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
    /// Similarity index in percent, for renames and copies.
    pub similarity: u32,
    pub content: Content,
    pub insertions: usize,
    pub deletions: usize,
    /// Whether `insertions` and `deletions` are the file's: false only for a file past even
    /// the counting budget.
    pub counted: bool,
}

impl FileDiff {
    fn either(&self) -> &Entry {
        self.new
            .as_ref()
            .or(self.old.as_ref())
            .expect("a change has a side")
    }

    /// The old path (the new one for additions).
    pub fn old_path(&self) -> &[u8] {
        self.old
            .as_ref()
            .unwrap_or_else(|| self.either())
            .path
            .as_slice()
    }

    /// The new path (the old one for deletions).
    pub fn new_path(&self) -> &[u8] {
        self.new
            .as_ref()
            .unwrap_or_else(|| self.either())
            .path
            .as_slice()
    }

    pub fn old_mode(&self) -> u32 {
        self.old.as_ref().map_or(0, |e| e.mode)
    }

    pub fn new_mode(&self) -> u32 {
        self.new.as_ref().map_or(0, |e| e.mode)
    }

    pub fn is_binary(&self) -> bool {
        match &self.content {
            Content::Binary { .. } | Content::BinaryUnchanged { .. } => true,
            Content::Replaced { old, new } => {
                matches!(**old, Content::Binary { .. }) || matches!(**new, Content::Binary { .. })
            }
            _ => false,
        }
    }
}

/// All changed files between two trees.
#[derive(Clone, Debug, Default)]
pub struct TreeDiff {
    pub files: Vec<FileDiff>,
    /// Some files were not diffed because of the limits.
    pub truncated: bool,
}

impl TreeDiff {
    pub fn insertions(&self) -> usize {
        self.files.iter().map(|f| f.insertions).sum()
    }

    pub fn deletions(&self) -> usize {
        self.files.iter().map(|f| f.deletions).sum()
    }

    /// The files whose hunks were left out.
    pub fn not_shown(&self) -> usize {
        self.files
            .iter()
            .filter(|f| matches!(f.content, Content::TooLarge))
            .count()
    }

    /// The files whose changed lines are not in the totals.
    pub fn uncounted(&self) -> usize {
        self.files.iter().filter(|f| !f.counted).count()
    }
}

/// The tree of a commit (read through the kept commits).
pub fn commit_tree(repo: &Repo, commit: ObjectId) -> Result<ObjectId, GitError> {
    Ok(super::commit::read_commit(repo, commit)?.tree)
}

/// Diffs the trees of two commits (`old` None: against the empty tree).
pub fn diff_commits(
    repo: &Repo,
    old: Option<ObjectId>,
    new: ObjectId,
    opts: &DiffOptions,
    path: Option<&[u8]>,
    limits: Limits,
) -> Result<TreeDiff, GitError> {
    let old_tree = old.map(|c| commit_tree(repo, c)).transpose()?;
    let new_tree = commit_tree(repo, new)?;
    diff_trees(repo, old_tree, Some(new_tree), opts, path, limits)
}

/// Diffs two trees (None: the empty tree), limited to `path` and what is below it.
pub fn diff_trees(
    repo: &Repo,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    opts: &DiffOptions,
    path: Option<&[u8]>,
    limits: Limits,
) -> Result<TreeDiff, GitError> {
    let changes = tree::changes(repo, old, new, path)?;
    let mut blobs = blobs::Blobs::new(repo);
    let pairs = rename::detect(changes, &mut blobs, opts.rename_limit)?;
    let mut differ = Differ {
        blobs,
        opts,
        lines_left: limits.max_lines,
        bytes_left: limits.max_bytes,
        unchanged_bytes_left: limits.max_bytes,
        count_bytes_left: limits.count_bytes,
        truncated: false,
    };
    let mut files = Vec::with_capacity(pairs.len());
    for pair in pairs {
        files.push(differ.file(pair)?);
    }
    Ok(TreeDiff {
        files,
        truncated: differ.truncated,
    })
}

/// The old path of the file renamed to `path` between two trees, by git's rename detection
/// over the whole change (no line diffs are made).
pub fn renamed_from(
    repo: &Repo,
    old: ObjectId,
    new: ObjectId,
    path: &[u8],
) -> Result<Option<BString>, GitError> {
    let changes = tree::changes(repo, Some(old), Some(new), None)?;
    let pairs = rename::detect(changes, &mut blobs::Blobs::new(repo), -1)?;
    Ok(pairs
        .into_iter()
        .find_map(|p| match (p.score, p.old, p.new) {
            (Some(_), Some(old), Some(new)) if new.path == path => Some(old.path),
            _ => None,
        }))
}

struct Differ<'r, 'o> {
    blobs: blobs::Blobs<'r>,
    opts: &'o DiffOptions,
    lines_left: usize,
    bytes_left: u64,
    /// A budget of its own for looking into unchanged blobs, so renames do not use up the diff's.
    unchanged_bytes_left: u64,
    /// What is left for counting the lines of files past the other budgets.
    count_bytes_left: u64,
    truncated: bool,
}

/// A file's content, its insertions and deletions, and whether those are counted.
type Counted = (Content, usize, usize, bool);

/// What one side of a file holds for diffing: blob bytes, or git's text for a submodule.
fn gitlink_text(id: &ObjectId) -> Vec<u8> {
    format!("Subproject commit {id}\n").into_bytes()
}

impl Differ<'_, '_> {
    fn file(&mut self, pair: rename::Pair) -> Result<FileDiff, GitError> {
        let status = match (&pair.old, &pair.new, pair.score) {
            (None, _, _) => Status::Added,
            (_, None, _) => Status::Deleted,
            (_, _, Some(_)) => Status::Renamed,
            (Some(a), Some(b), None) if a.mode & 0o170000 != b.mode & 0o170000 => {
                Status::TypeChanged
            }
            _ => Status::Modified,
        };
        let mut file = FileDiff {
            status,
            similarity: pair
                .score
                .map_or(0, |s| (s * 100 / rename::MAX_SCORE) as u32),
            old: pair.old,
            new: pair.new,
            content: Content::Unchanged,
            insertions: 0,
            deletions: 0,
            counted: true,
        };
        let (content, ins, del, counted) = if status == Status::TypeChanged {
            let (old, oi, od, oc) = self.content(file.old.as_ref(), None)?;
            let (new, ni, nd, nc) = self.content(None, file.new.as_ref())?;
            let content = Content::Replaced {
                old: Box::new(old),
                new: Box::new(new),
            };
            (content, oi + ni, od + nd, oc && nc)
        } else {
            self.content(file.old.as_ref(), file.new.as_ref())?
        };
        file.content = content;
        file.insertions = ins;
        file.deletions = del;
        file.counted = counted;
        Ok(file)
    }

    fn side(&mut self, e: Option<&Entry>) -> Result<std::sync::Arc<Vec<u8>>, GitError> {
        match e {
            None => Ok(std::sync::Arc::new(Vec::new())),
            Some(e) if e.is_gitlink() => Ok(std::sync::Arc::new(gitlink_text(&e.id))),
            Some(e) => self.blobs.get(e.id),
        }
    }

    fn size(&mut self, e: Option<&Entry>) -> Result<u64, GitError> {
        match e {
            None => Ok(0),
            Some(e) if e.is_gitlink() => Ok(gitlink_text(&e.id).len() as u64),
            Some(e) => self.blobs.size(e.id),
        }
    }

    /// The content of a file whose blob did not change: only whether it is binary matters,
    /// as far as its own byte budget allows looking.
    fn unchanged(&mut self, e: &Entry) -> Result<Content, GitError> {
        if e.is_gitlink() || self.truncated {
            return Ok(Content::Unchanged);
        }
        let size = self.size(Some(e))?;
        if size > self.unchanged_bytes_left {
            return Ok(Content::Unchanged);
        }
        self.unchanged_bytes_left -= size;
        Ok(if is_binary(&self.side(Some(e))?) {
            Content::BinaryUnchanged { size }
        } else {
            Content::Unchanged
        })
    }

    fn content(&mut self, old: Option<&Entry>, new: Option<&Entry>) -> Result<Counted, GitError> {
        if let (Some(a), Some(b)) = (old, new)
            && a.id == b.id
        {
            return Ok((self.unchanged(a)?, 0, 0, true));
        }
        let bytes = self.size(old)? + self.size(new)?;
        if self.truncated || bytes > self.bytes_left {
            // every later file is only counted, so the shown ones stay in order
            self.truncated = true;
            return self.count_only(old, new, bytes);
        }
        self.bytes_left -= bytes;
        // The new side first: packs mostly store the older version as a delta against the
        // newer one, and the pack reader keeps the result just read (`git::packs`), so the
        // old side is then one delta away.
        let (b, a) = (self.side(new)?, self.side(old)?);
        if let Some(binary) = binary_content(&a, &b) {
            return Ok((binary, 0, 0, true));
        }
        let opts = self.opts;
        match lines::diff_text(
            &a,
            &b,
            opts.context,
            opts.ignore_whitespace,
            self.lines_left,
        ) {
            Ok(d) => {
                self.lines_left -= d.hunks.iter().map(|h| h.lines.len()).sum::<usize>();
                Ok((Content::Text(d.hunks), d.insertions, d.deletions, true))
            }
            Err((insertions, deletions)) => {
                self.truncated = true;
                Ok((Content::TooLarge, insertions, deletions, true))
            }
        }
    }

    /// A file past the diff's budgets: its lines counted (no hunks) within the counting
    /// budget, else nothing.
    fn count_only(
        &mut self,
        old: Option<&Entry>,
        new: Option<&Entry>,
        bytes: u64,
    ) -> Result<Counted, GitError> {
        if bytes > self.count_bytes_left {
            return Ok((Content::TooLarge, 0, 0, false));
        }
        self.count_bytes_left -= bytes;
        let (b, a) = (self.side(new)?, self.side(old)?);
        if let Some(binary) = binary_content(&a, &b) {
            return Ok((binary, 0, 0, true));
        }
        let (insertions, deletions) = lines::count_changes(&a, &b, self.opts.ignore_whitespace);
        Ok((Content::TooLarge, insertions, deletions, true))
    }
}

/// The content of a file with a binary side: only the sizes.
fn binary_content(a: &[u8], b: &[u8]) -> Option<Content> {
    (is_binary(a) || is_binary(b)).then_some(Content::Binary {
        old_size: a.len() as u64,
        new_size: b.len() as u64,
    })
}

/// Abbreviated object ids as git prints them in `index` lines: unique prefixes of at least
/// `core.abbrev` (or git's automatic length) hex digits.
pub struct Abbrev {
    /// A handle that looks only at the packs already known: with gix's default it would list
    /// the pack directory and stat every pack for each id (two dozen calls per patch).
    objects: gix::odb::Handle,
    len: usize,
}

impl Abbrev {
    pub fn new(repo: &gix::Repository) -> Self {
        let configured = repo
            .config_snapshot()
            .integer("core.abbrev")
            .filter(|n| (4..=40).contains(n))
            .map(|n| n as usize);
        Self::with_len(repo, configured)
    }

    /// git's automatic length whatever `core.abbrev` says, as cgit's pages (blame) show ids.
    pub fn automatic(repo: &gix::Repository) -> Self {
        Self::with_len(repo, None)
    }

    fn with_len(repo: &gix::Repository, configured: Option<usize>) -> Self {
        let mut objects = (*repo.objects).clone();
        objects.refresh_never();
        let len = configured.unwrap_or_else(|| {
            let count = objects.packed_object_count().unwrap_or(0);
            let bits = 64 - count.leading_zeros();
            (bits.div_ceil(2) as usize).max(7)
        });
        Abbrev { objects, len }
    }

    pub fn hex(&self, id: &ObjectId) -> String {
        if id.is_null() {
            return "0".repeat(self.len);
        }
        let candidate = gix::odb::store::prefix::disambiguate::Candidate::new(*id, self.len)
            .expect("abbreviation lengths are valid");
        match self.objects.disambiguate_prefix(candidate) {
            Ok(Some(prefix)) => prefix.to_string(),
            _ => id.to_hex_with_len(self.len).to_string(),
        }
    }
}
