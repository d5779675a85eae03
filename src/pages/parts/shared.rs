//! Pieces several pages show the same way: ages, subjects, decorations, object and snapshot links.

use super::format;
use crate::git::CommitInfo;
use crate::pages::RepoCtx;
use crate::repos::{Branch, DecorationKind, Tag};
use gix::ObjectId;
use gix::bstr::ByteSlice;

/// A date shown as `span.age-*` (relative) or as an absolute date with the full date as title.
pub struct Age {
    pub class: &'static str,
    pub title: String,
    pub text: String,
}

/// Relative age, as on summary, refs and index pages.
pub fn age(t: gix::date::Time, now: i64) -> Age {
    let (class, text) = format::age(t, now);
    Age {
        class,
        title: format::iso_date(t),
        text,
    }
}

/// The log page's date: relative when younger than two weeks, else `YYYY-MM-DD`.
pub fn log_age(t: gix::date::Time, now: i64) -> Age {
    if format::is_old(t, now) {
        Age {
            class: "",
            title: format::iso_date(t),
            text: format::short_date(t),
        }
    } else {
        age(t, now)
    }
}

/// A subject cut to `max-message-length` as cgit does (limits under 15 do not cut).
pub fn truncate_subject(subject: &str, max: usize) -> String {
    if subject.is_empty() {
        return "(no commit message)".into();
    }
    if max < 15 || subject.chars().count() <= max {
        return subject.to_string();
    }
    let cut: String = subject.chars().take(max - 3).collect();
    format!("{cut}...")
}

/// A ref label next to a commit: `a.branch-deco` and friends.
pub struct DecoLink {
    pub class: &'static str,
    pub href: String,
    pub name: String,
}

pub fn decorations(ctx: &RepoCtx<'_>, id: &ObjectId) -> Vec<DecoLink> {
    let Some(labels) = ctx.refs.decorations.get(id) else {
        return Vec::new();
    };
    let l = ctx.links();
    let hex = id.to_string();
    labels
        .iter()
        .filter(|d| {
            d.kind != DecorationKind::Remote || ctx.state.config.opts.enable_remote_branches
        })
        .map(|d| {
            let (class, href) = match d.kind {
                DecorationKind::Branch => ("branch-deco", l.page("log", None, Some(&d.name), &[])),
                DecorationKind::Remote => ("remote-deco", l.page("log", None, Some(&d.name), &[])),
                DecorationKind::AnnotatedTag => (
                    "tag-annotated-deco",
                    l.page("tag", None, Some(&d.name), &[]),
                ),
                DecorationKind::Tag => ("tag-deco", l.page("tag", None, Some(&d.name), &[])),
                DecorationKind::Head | DecorationKind::Other => (
                    "deco",
                    l.page("commit", None, Some(&ctx.head), &[("id", &hex)]),
                ),
            };
            DecoLink {
                class,
                href,
                name: d.name.clone(),
            }
        })
        .collect()
}

/// A link to any object, labelled `<type> <10 hex>...` like cgit's object links.
pub fn object_link(ctx: &RepoCtx<'_>, id: &ObjectId, kind: gix::object::Kind) -> (String, String) {
    let hex = id.to_string();
    let page = match kind {
        gix::object::Kind::Commit => "commit",
        gix::object::Kind::Tree => "tree",
        gix::object::Kind::Blob => "blob",
        gix::object::Kind::Tag => "tag",
    };
    let href = ctx
        .links()
        .page(page, None, Some(&ctx.head), &[("id", &hex)]);
    (href, format!("{kind} {}...", &hex[..10]))
}

/// The file-name prefix of snapshots: `repo.snapshot-prefix`, else the url's last component
/// without `.git`.
pub fn snapshot_prefix(ctx: &RepoCtx<'_>) -> String {
    let cfg = &ctx.state.config;
    if let Some(p) = &cfg.snapshot_prefix {
        return p.clone();
    }
    let url = cfg.url.trim_end_matches('/');
    let base = url.rsplit('/').next().unwrap_or(url);
    base.strip_suffix(".git").unwrap_or(base).to_string()
}

/// A snapshot download: the archive, and its signature when the repository has one.
pub struct SnapshotLink {
    pub href: String,
    pub file: String,
    pub sig_href: Option<String>,
}

/// Snapshot links for a ref or commit, one per enabled format, each with its signature's link
/// as cgit gives it (a `.tar` signature also serves the compressed tarballs).
pub fn snapshot_links(ctx: &RepoCtx<'_>, refname: &str) -> Vec<SnapshotLink> {
    let prefix = snapshot_prefix(ctx);
    let stem = if refname.starts_with(&prefix) {
        refname.to_string()
    } else {
        let version = match refname.strip_prefix(['v', 'V']) {
            Some(rest)
                if rest.starts_with(|c: char| c.is_ascii_digit())
                    && ctx.refs.tag(rest).is_none() =>
            {
                rest
            }
            _ => refname,
        };
        format!("{prefix}-{version}")
    };
    // Signatures are notes on the object the name resolves to (a tag, not its commit).
    let signed = ctx
        .refs
        .has_signatures()
        .then(|| crate::git::rev::resolve(ctx.repo, refname).ok())
        .flatten();
    let signature = |suffix: &str| signed.and_then(|id| snapshot_signature(ctx, id, suffix));
    ctx.state
        .config
        .snapshot_suffixes()
        .map(|suffix| {
            let file = format!("{stem}.{suffix}");
            let href = |name: &str| {
                ctx.links()
                    .page("snapshot", Some(name.as_bytes()), None, &[])
            };
            let sig_file = if signature(suffix).is_some() {
                Some(format!("{file}.asc"))
            } else if suffix.starts_with("tar") && signature("tar").is_some() {
                Some(format!("{stem}.tar.asc"))
            } else {
                None
            };
            SnapshotLink {
                href: href(&file),
                sig_href: sig_file.as_deref().map(href),
                file,
            }
        })
        .collect()
}

/// The blob of the signature of snapshot format `suffix` for `object`: its note in
/// `refs/notes/signatures/<suffix>`.
pub fn snapshot_signature(ctx: &RepoCtx<'_>, object: ObjectId, suffix: &str) -> Option<ObjectId> {
    let tip = ctx
        .refs
        .notes_tip(&format!("refs/notes/signatures/{suffix}"))?;
    crate::git::notes::note_blob(ctx.repo, tip, object)
}

/// A branch row of summary and refs.
pub struct BranchRow {
    pub name: String,
    pub log_href: String,
    pub subject: String,
    pub commit_href: String,
    /// HTML (escaped, or the email-filter's output).
    pub author: String,
    pub age: Age,
}

pub fn branch_row(ctx: &RepoCtx<'_>, b: &Branch) -> BranchRow {
    let l = ctx.links();
    BranchRow {
        name: b.name.clone(),
        log_href: l.page("log", None, Some(&b.name), &[]),
        subject: truncate_subject(&b.subject, ctx.site.config.globals.max_message_length),
        commit_href: l.page("commit", None, Some(&b.name), &[]),
        author: super::filter::person_html(ctx, &b.author, &b.author.name, "refs"),
        age: age(b.committer_time, ctx.now),
    }
}

/// A tag row of summary and refs.
pub struct TagRow {
    pub name: String,
    pub tag_href: String,
    pub downloads: Vec<SnapshotLink>,
    pub object: Option<(String, String)>,
    /// HTML (escaped, or the email-filter's output).
    pub author: String,
    pub age: Option<Age>,
}

pub fn tag_row(ctx: &RepoCtx<'_>, t: &Tag) -> TagRow {
    let downloads = if t.target_kind == gix::object::Kind::Commit {
        snapshot_links(ctx, &t.name)
    } else {
        Vec::new()
    };
    let object = downloads
        .is_empty()
        .then(|| object_link(ctx, &t.target, t.target_kind));
    TagRow {
        name: t.name.clone(),
        tag_href: ctx.links().page("tag", None, Some(&t.name), &[]),
        downloads,
        object,
        author: t
            .author
            .as_ref()
            .map(|a| super::filter::person_html(ctx, a, &a.name, "refs"))
            .unwrap_or_default(),
        age: t.date.map(|d| age(d, ctx.now)),
    }
}

/// A commit row of log-style tables (summary's recent log, the log page).
pub struct LogRow {
    pub age: Age,
    pub subject: String,
    pub commit_href: String,
    pub decorations: Vec<DecoLink>,
    /// HTML (escaped, or the email-filter's output).
    pub author: String,
}

pub fn log_row(ctx: &RepoCtx<'_>, c: &CommitInfo) -> LogRow {
    let hex = c.id.to_string();
    LogRow {
        age: log_age(c.committer.time, ctx.now),
        subject: truncate_subject(&c.subject, ctx.site.config.globals.max_message_length),
        commit_href: ctx
            .links()
            .page("commit", None, Some(&ctx.head), &[("id", &hex)]),
        decorations: decorations(ctx, &c.id),
        author: super::filter::person_html(ctx, &c.author, &c.author.name, "log"),
    }
}

/// The commit a tree-like page shows: `id`, else `h`, peeled to a commit, with cgit's messages.
pub fn page_commit(ctx: &RepoCtx<'_>) -> Result<ObjectId, crate::pages::PageError> {
    use crate::pages::PageError;
    let rev = ctx.req.query.id.as_deref().unwrap_or(&ctx.head);
    match crate::git::rev::resolve(ctx.repo, rev) {
        Ok(id) => crate::git::rev::peel_named(ctx.repo, rev, id)?
            .ok_or_else(|| PageError::NotFound(format!("Invalid commit reference: {rev}"))),
        Err(crate::git::GitError::NotFound(_)) => {
            Err(PageError::NotFound(format!("Invalid revision name: {rev}")))
        }
        Err(e) => Err(e.into()),
    }
}

/// A link for tree-like pages: the current `h`, and `id` unless it equals the head.
pub fn rev_link(ctx: &RepoCtx<'_>, page: &str, path: Option<&[u8]>) -> String {
    let id = ctx.req.query.id.as_deref().filter(|id| *id != ctx.head);
    let args = id.map(|id| [("id", id)]);
    let args: &[(&str, &str)] = args.as_ref().map_or(&[], |a| &a[..]);
    ctx.links().page(page, path, Some(&ctx.head), args)
}

/// A `Content-Disposition: inline` value naming `name`; bytes a header cannot carry become `_`.
pub fn inline_disposition(name: &[u8]) -> String {
    let mut out = String::from("inline; filename=\"");
    for &b in name {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push('_'),
        }
    }
    out.push('"');
    out
}

/// A path as page titles show it: `c « b « a`, the components last first.
pub fn path_title(path: &[u8]) -> String {
    let parts: Vec<String> = crate::git::tree::components(path.as_bstr())
        .rev()
        .map(|c| c.to_str_lossy().into_owned())
        .collect();
    parts.join(" « ")
}

/// `path:` crumbs: `root` (its href made for `None`), then one per path component (href made
/// for the path up to it).
pub fn path_crumbs(path: &[u8], href: impl Fn(Option<&[u8]>) -> String) -> Vec<(String, String)> {
    let mut out = vec![("root".to_string(), href(None))];
    let mut offset = 0;
    for part in path.split(|b| *b == b'/') {
        offset += part.len();
        if !part.is_empty() {
            let label = String::from_utf8_lossy(part).into_owned();
            out.push((label, href(Some(&path[..offset]))));
        }
        offset += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{path_title, truncate_subject};

    #[test]
    fn titles_reverse_the_path() {
        assert_eq!(path_title(b"src/main.rs"), "main.rs « src");
    }

    #[test]
    fn subjects_truncate_like_cgit() {
        assert_eq!(truncate_subject("", 80), "(no commit message)");
        assert_eq!(truncate_subject("short", 80), "short");
        assert_eq!(
            truncate_subject(&"x".repeat(20), 15),
            format!("{}...", "x".repeat(12))
        );
        assert_eq!(truncate_subject(&"y".repeat(20), 10), "y".repeat(20));
    }
}
