//! The diff body of the commit and diff pages: diffstat, then the unified or side-by-side diff.
//!
//! The output is a pure function of the arguments (commits, options, path): it names no
//! repository and no branch, and its links are relative to `<repo>/<page>/<path>`, so the same
//! bytes are right for every page and every fork that shows these commits.

use super::html::{escape, escape_into};
use super::links::{escape_arg, escape_path};
use crate::git::diff::{
    self, Content, DiffOptions, FileDiff, Hunk, Limits, LineKind, Status, TreeDiff,
};
use crate::pages::PageError;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use std::fmt::Write;

/// cgit's `dt`: how the diff is shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DiffMode {
    #[default]
    Unified,
    SideBySide,
    StatOnly,
}

impl DiffMode {
    pub fn from_dt(dt: u8) -> DiffMode {
        match dt {
            1 => DiffMode::SideBySide,
            2 => DiffMode::StatOnly,
            _ => DiffMode::Unified,
        }
    }

    pub fn dt(self) -> u8 {
        self as u8
    }
}

/// Everything besides the commits and the path that changes the body (a cache key part).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ViewOptions {
    pub diff: DiffOptions,
    pub mode: DiffMode,
}

/// Renders diffstat and diff of `old..new` (`old` None: against the empty tree), limited to
/// `path`.
pub fn render(
    repo: &crate::git::Repo,
    old: Option<ObjectId>,
    new: ObjectId,
    opts: &ViewOptions,
    path: Option<&[u8]>,
) -> Result<String, PageError> {
    let tree = diff::diff_commits(repo, old, new, &opts.diff, path, Limits::PAGE)?;
    let first_parent = crate::git::commit::read_commit(repo, new)?
        .parents
        .first()
        .copied();
    let body = Body {
        links: RelLinks::new(old, new, old != first_parent, opts, path),
        new,
    };
    let mut out = String::with_capacity(8192);
    body.diffstat(&mut out, &tree, path);
    match opts.mode {
        DiffMode::StatOnly => {}
        DiffMode::Unified => body.unified(&mut out, &tree),
        DiffMode::SideBySide => body.side_by_side(&mut out, &tree),
    }
    Ok(out)
}

/// What every link of a body shown for `path` starts with: the `../` steps from the page's URL
/// (`<repo>/<page>/<path>`, `<repo>/<page>/` without a path) up to the repository's.
pub fn relative_prefix(path: Option<&[u8]>) -> String {
    let depth = path.map_or(0, |p| p.split(|&b| b == b'/').count()).max(1);
    "../".repeat(depth)
}

/// Links relative to the page the body is shown on.
struct RelLinks {
    up: String,
    diff_args: String,
    old_hex: String,
    new_hex: String,
}

impl RelLinks {
    fn new(
        old: Option<ObjectId>,
        new: ObjectId,
        explicit_old: bool,
        opts: &ViewOptions,
        path: Option<&[u8]>,
    ) -> RelLinks {
        let mut args = format!("?id={new}");
        if let (Some(old), true) = (old, explicit_old) {
            let _ = write!(args, "&id2={old}");
        }
        if opts.mode != DiffMode::Unified {
            let _ = write!(args, "&dt={}", opts.mode.dt());
        }
        if opts.diff.context != 3 {
            let _ = write!(args, "&context={}", opts.diff.context);
        }
        if opts.diff.ignore_whitespace {
            args.push_str("&ignorews=1");
        }
        RelLinks {
            up: relative_prefix(path),
            diff_args: args,
            old_hex: old.map(|o| o.to_string()).unwrap_or_default(),
            new_hex: new.to_string(),
        }
    }

    /// The diff page for `path` (all files when None), with the current options.
    fn diff(&self, path: Option<&[u8]>) -> String {
        let path = path.map(escape_path).unwrap_or_default();
        escape(&format!("{}diff/{path}{}", self.up, self.diff_args))
    }

    /// The tree view of `path` at the old (`new` false) or new commit.
    fn tree(&self, path: &[u8], new: bool) -> String {
        let id = if new { &self.new_hex } else { &self.old_hex };
        escape(&format!(
            "{}tree/{}?id={}",
            self.up,
            escape_path(path),
            escape_arg(id.as_bytes())
        ))
    }
}

struct Body {
    links: RelLinks,
    new: ObjectId,
}

/// Abbreviated ids in `index` lines: a fixed length, so that the body does not depend on how
/// many objects the repository showing it has (git would lengthen them to stay unique there).
const ABBREV: usize = 10;

fn text(bytes: &[u8]) -> String {
    escape(&bytes.to_str_lossy())
}

/// `-rw-r--r--` style mode as cgit shows it.
fn filemode(mode: u32) -> String {
    let kind = match mode & 0o170000 {
        0o040000 => 'd',
        0o120000 => 'l',
        0o160000 => 'm',
        _ => '-',
    };
    let mut s = String::with_capacity(10);
    s.push(kind);
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

fn status_class(status: Status) -> &'static str {
    match status {
        Status::Added => "add",
        Status::Copied => "cpy",
        Status::Deleted => "del",
        Status::Modified => "upd",
        Status::Renamed => "mov",
        Status::TypeChanged => "typ",
    }
}

fn binary_sizes(f: &FileDiff) -> (u64, u64) {
    let sizes = |c: &Content| match c {
        Content::Binary { old_size, new_size } => (*old_size, *new_size),
        Content::BinaryUnchanged { size } => (*size, *size),
        _ => (0, 0),
    };
    match &f.content {
        Content::Replaced { old, new } => (sizes(old).0, sizes(new).1),
        c => sizes(c),
    }
}

/// What the diff below a cut diffstat leaves out (the counts above it are exact unless it says
/// otherwise); empty when nothing is left out.
fn too_large_note(tree: &TreeDiff) -> String {
    let files = |n: usize| {
        if n == 1 {
            "1 file".to_string()
        } else {
            format!("{n} files")
        }
    };
    let (not_shown, uncounted) = (tree.not_shown(), tree.uncounted());
    if not_shown == 0 {
        return String::new();
    }
    let mut note = format!(" (diff too large: {} not shown", files(not_shown));
    if uncounted > 0 {
        let _ = write!(
            note,
            "; {} too large even to count, left out of the totals",
            files(uncounted)
        );
    }
    note.push(')');
    note
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

impl Body {
    fn diffstat(&self, out: &mut String, tree: &TreeDiff, path: Option<&[u8]>) {
        let _ = write!(
            out,
            "<div class='diffstat-header'><a href='{}'>Diffstat</a>",
            self.links.diff(None)
        );
        if let Some(p) = path {
            let _ = write!(out, " (limited to '{}')", text(p));
        }
        out.push_str("</div><table summary='diffstat' class='diffstat'>");
        let max_changes = tree
            .files
            .iter()
            .map(|f| f.insertions + f.deletions)
            .max()
            .unwrap_or(0);
        for f in &tree.files {
            self.diffstat_row(out, f, max_changes);
        }
        let _ = write!(
            out,
            "</table><div class='diffstat-summary'>{} files changed, {} insertions, {} deletions",
            tree.files.len(),
            tree.insertions(),
            tree.deletions()
        );
        out.push_str(&too_large_note(tree));
        out.push_str("</div>");
    }

    fn diffstat_row(&self, out: &mut String, f: &FileDiff, max_changes: usize) {
        let mode = if f.new.is_some() {
            f.new_mode()
        } else {
            f.old_mode()
        };
        let _ = write!(out, "<tr><td class='mode'>{}", filemode(mode));
        if f.old.is_some() && f.new.is_some() && f.old_mode() != f.new_mode() {
            let _ = write!(
                out,
                "<span class='modechange'>[{}]</span>",
                filemode(f.old_mode())
            );
        }
        let _ = write!(
            out,
            "</td><td class='{}'><a href='{}'>{}</a>",
            status_class(f.status),
            self.links.diff(Some(f.new_path())),
            text(f.new_path())
        );
        if matches!(f.status, Status::Renamed | Status::Copied) {
            let word = if f.status == Status::Renamed {
                "renamed"
            } else {
                "copied"
            };
            let _ = write!(out, " ({word} from {})", text(f.old_path()));
        }
        out.push_str("</td><td class='right'>");
        if f.is_binary() {
            let (old, new) = binary_sizes(f);
            let _ = writeln!(
                out,
                "bin</td><td class='graph'>{old} -&gt; {new} bytes</td></tr>"
            );
            return;
        }
        if !f.counted {
            out.push_str("?</td><td class='graph'></td></tr>\n");
            return;
        }
        let changes = f.insertions + f.deletions;
        let _ = writeln!(
            out,
            "{changes}</td><td class='graph'><table summary='file diffstat' width='{}%'><tr>\
             <td class='add' style='width: {:.1}%;'></td><td class='rem' style='width: {:.1}%;'></td>\
             <td class='none' style='width: {:.1}%;'></td></tr></table></td></tr>",
            max_changes.min(100),
            percent(f.insertions, max_changes),
            percent(f.deletions, max_changes),
            percent(max_changes - changes, max_changes)
        );
    }

    /// cgit's file header: `diff --git`, modes, `index`, `---`/`+++` with tree links.
    fn head(&self, out: &mut String, f: &FileDiff) {
        let _ = write!(
            out,
            "<div class='head'>diff --git a/{} b/{}",
            text(f.old_path()),
            text(f.new_path())
        );
        let (m1, m2) = (f.old_mode(), f.new_mode());
        if f.old.is_none() {
            let _ = write!(out, "<br/>new file mode {m2:06o}");
        }
        if f.new.is_none() {
            let _ = write!(out, "<br/>deleted file mode {m1:06o}");
        }
        let gitlink = m1 == 0o160000 || m2 == 0o160000;
        if !gitlink {
            let null = ObjectId::null(self.new.kind());
            let id1 = f.old.as_ref().map_or(null, |e| e.id);
            let id2 = f.new.as_ref().map_or(null, |e| e.id);
            let _ = write!(
                out,
                "<br/>index {}..{}",
                id1.to_hex_with_len(ABBREV),
                id2.to_hex_with_len(ABBREV)
            );
            if m1 != 0 && m2 != 0 {
                let _ = write!(out, " {m1:06o}");
                if m1 != m2 {
                    let _ = write!(out, "..{m2:06o}");
                }
            }
            match &f.old {
                None => out.push_str("<br/>--- /dev/null"),
                Some(e) => {
                    let _ = write!(
                        out,
                        "<br/>--- a/<a href='{}'>{}</a>",
                        self.links.tree(&e.path, false),
                        text(&e.path)
                    );
                }
            }
            match &f.new {
                None => out.push_str("<br/>+++ /dev/null"),
                Some(e) => {
                    let _ = write!(
                        out,
                        "<br/>+++ b/<a href='{}'>{}</a>",
                        self.links.tree(&e.path, true),
                        text(&e.path)
                    );
                }
            }
        }
        out.push_str("</div>");
    }

    fn unified(&self, out: &mut String, tree: &TreeDiff) {
        out.push_str("<table summary='diff' class='diff'><tr><td>");
        for f in &tree.files {
            self.head(out, f);
            if f.old.as_ref().is_some_and(|e| e.is_gitlink())
                || f.new.as_ref().is_some_and(|e| e.is_gitlink())
            {
                Self::subproject_lines(out, f);
                continue;
            }
            self.unified_content(out, &f.content);
        }
        out.push_str("</td></tr></table>");
    }

    fn subproject_lines(out: &mut String, f: &FileDiff) {
        if let Some(e) = &f.old {
            let _ = write!(out, "<div class='del'>-Subproject {}</div>", e.id);
        }
        if let Some(e) = &f.new {
            let _ = write!(out, "<div class='add'>+Subproject {}</div>", e.id);
        }
    }

    fn unified_content(&self, out: &mut String, content: &Content) {
        match content {
            Content::Unchanged | Content::BinaryUnchanged { .. } => {}
            Content::Binary { .. } => out.push_str("Binary files differ"),
            Content::TooLarge => out.push_str("<div class='ctx'>(diff too large to show)</div>"),
            Content::Replaced { old, new } => {
                self.unified_content(out, old);
                self.unified_content(out, new);
            }
            Content::Text(hunks) => {
                for h in hunks {
                    let _ = write!(
                        out,
                        "<div class='hunk'>{}</div>",
                        text(&diff::patch::hunk_header(h))
                    );
                    for l in &h.lines {
                        let (class, sign) = match l.kind {
                            LineKind::Context => ("ctx", ' '),
                            LineKind::Add => ("add", '+'),
                            LineKind::Del => ("del", '-'),
                        };
                        // Escaped straight into the page: a page may have thousands of lines.
                        out.push_str("<div class='");
                        out.push_str(class);
                        out.push_str("'>");
                        out.push(sign);
                        escape_into(out, &l.text.to_str_lossy());
                        out.push_str("</div>");
                        if l.no_newline {
                            out.push_str("<div class='ctx'>\\ No newline at end of file</div>");
                        }
                    }
                }
            }
        }
    }

    fn side_by_side(&self, out: &mut String, tree: &TreeDiff) {
        out.push_str("<table summary='ssdiff' class='ssdiff'>");
        for f in &tree.files {
            out.push_str("<tr><td class='space' colspan='4'><div></div></td></tr>");
            out.push_str("<tr><td class='head' colspan='4'>");
            self.head(out, f);
            out.push_str("</td></tr>");
            self.side_by_side_content(out, f, &f.content);
            out.push_str("<tr><td class='foot' colspan='4'></td></tr>");
        }
        out.push_str("</table>");
    }

    fn side_by_side_content(&self, out: &mut String, f: &FileDiff, content: &Content) {
        match content {
            Content::Unchanged | Content::BinaryUnchanged { .. } => {}
            Content::Binary { .. } => {
                out.push_str("<tr><td colspan='4'>Binary files differ</td></tr>");
            }
            Content::TooLarge => {
                out.push_str("<tr><td colspan='4'>(diff too large to show)</td></tr>");
            }
            Content::Replaced { old, new } => {
                self.side_by_side_content(out, f, old);
                self.side_by_side_content(out, f, new);
            }
            Content::Text(hunks) => {
                for h in hunks {
                    self.side_by_side_hunk(out, f, h);
                }
            }
        }
    }

    fn side_by_side_hunk(&self, out: &mut String, f: &FileDiff, h: &Hunk) {
        let _ = write!(
            out,
            "<tr><td colspan='4' class='hunk'>{}</td></tr>",
            text(&diff::patch::hunk_header(h))
        );
        let lines = &h.lines;
        let mut i = 0;
        while i < lines.len() {
            if lines[i].kind == LineKind::Context {
                let l = &lines[i];
                let cell = expand(&l.text);
                self.ss_row(
                    out,
                    f,
                    (l.old_no, "ctx", cell.clone()),
                    (l.new_no, "ctx", cell),
                );
                i += 1;
                continue;
            }
            let dels: Vec<_> = lines[i..]
                .iter()
                .take_while(|l| l.kind == LineKind::Del)
                .collect();
            let adds: Vec<_> = lines[i + dels.len()..]
                .iter()
                .take_while(|l| l.kind == LineKind::Add)
                .collect();
            i += dels.len() + adds.len();
            self.ss_block(out, f, &dels, &adds);
        }
    }

    /// A block of deleted and added lines: paired side by side as `changed` when both sides
    /// have lines, else `del`/`add` against an empty `_dark` cell.
    fn ss_block(&self, out: &mut String, f: &FileDiff, dels: &[&diff::Line], adds: &[&diff::Line]) {
        let changed = !dels.is_empty() && !adds.is_empty();
        for k in 0..dels.len().max(adds.len()) {
            let (d, a) = (dels.get(k), adds.get(k));
            if changed && let (Some(d), Some(a)) = (d, a) {
                let (left, right) = intraline(&d.text, &a.text);
                self.ss_row(
                    out,
                    f,
                    (d.old_no, "changed", left),
                    (a.new_no, "changed", right),
                );
                continue;
            }
            let (class, dark) = match (changed, d.is_some()) {
                (true, _) => ("changed", "changed_dark"),
                (false, true) => ("del", "del_dark"),
                (false, false) => ("add", "add_dark"),
            };
            let empty = || (0, dark, String::new());
            let left = d.map_or_else(empty, |l| (l.old_no, class, expand(&l.text)));
            let right = a.map_or_else(empty, |l| (l.new_no, class, expand(&l.text)));
            self.ss_row(out, f, left, right);
        }
    }

    /// One row: line number (0: none) and content cell per side; content is already HTML.
    fn ss_row(
        &self,
        out: &mut String,
        f: &FileDiff,
        left: (u32, &str, String),
        right: (u32, &str, String),
    ) {
        out.push_str("<tr>");
        for ((no, class, html), is_new) in [(left, false), (right, true)] {
            out.push_str("\n<td class='lineno'>");
            if no > 0 {
                let path = if is_new { f.new_path() } else { f.old_path() };
                let _ = write!(
                    out,
                    "<a href='{}#n{no}'>{no}</a>",
                    self.links.tree(path, is_new)
                );
            }
            let _ = write!(out, "</td><td class='{class}'>{html}</td>");
        }
        out.push_str("</tr>");
    }
}

/// A line for a side-by-side cell: tabs expanded to 8 columns, escaped.
fn expand(line: &[u8]) -> String {
    escape(&expand_chars(line).iter().collect::<String>())
}

/// Marks what differs between a deleted and an added line with `span.del`/`span.add`, from a
/// character diff (lines over 1000 characters are not marked).
fn intraline(old: &[u8], new: &[u8]) -> (String, String) {
    let a: Vec<char> = expand_chars(old);
    let b: Vec<char> = expand_chars(new);
    if a.len() > 1000 || b.len() > 1000 {
        return (
            escape(&a.iter().collect::<String>()),
            escape(&b.iter().collect::<String>()),
        );
    }
    let mut input = gix::diff::blob::InternedInput::default();
    input.update_before(a.iter().copied());
    input.update_after(b.iter().copied());
    let mut d = gix::diff::blob::Diff::compute(gix::diff::blob::Algorithm::Myers, &input);
    d.postprocess_no_heuristic(&input);
    let mark = |chars: &[char], changed: &dyn Fn(u32) -> bool, class: &str| {
        let mut html = String::new();
        let mut open = false;
        for (i, c) in chars.iter().enumerate() {
            let on = changed(i as u32);
            if on != open {
                html.push_str(if on { "<span class='" } else { "</span>" });
                if on {
                    html.push_str(class);
                    html.push_str("'>");
                }
                open = on;
            }
            html.push_str(&escape(c.encode_utf8(&mut [0; 4])));
        }
        if open {
            html.push_str("</span>");
        }
        html
    };
    (
        mark(&a, &|i| d.is_removed(i), "del"),
        mark(&b, &|i| d.is_added(i), "add"),
    )
}

fn expand_chars(line: &[u8]) -> Vec<char> {
    let mut v = Vec::with_capacity(line.len());
    for c in line.to_str_lossy().chars() {
        if c == '\t' {
            let n = 8 - v.len() % 8;
            v.extend(std::iter::repeat_n(' ', n));
        } else {
            v.push(c);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_render_like_cgit() {
        assert_eq!(filemode(0o100644), "-rw-r--r--");
        assert_eq!(filemode(0o100755), "-rwxr-xr-x");
        assert_eq!(filemode(0o120000), "l---------");
        assert_eq!(filemode(0o160000), "m---------");
    }

    #[test]
    fn intraline_marks_changed_characters() {
        let (l, r) = intraline(b"c();", b"cc();");
        assert_eq!(l, "c();");
        assert_eq!(r, "c<span class='add'>c</span>();");
    }
}
