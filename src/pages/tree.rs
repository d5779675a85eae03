//! tree: a directory listing or a file view at a revision (`id`, else `h`), with cgit's mode
//! strings, collapsed single-child directories, submodule and symlink links, line numbers and
//! hex dumps. Large trees and blobs are cut to a bounded size, with a note.

use super::parts::frame::{self, Frame};
use super::parts::html;
use super::parts::links::escape_path;
use super::parts::shared;
use super::{PageError, RepoCtx, Response};
use crate::git::tree::{self as gtree, Entry, Found};
use crate::git::{self, GitError};
use askama::Template;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryMode;

/// Rows of a listing shown at most.
const MAX_ROWS: usize = 3000;
/// About what one listing row takes in HTML (git.git's root: 245 bytes a row).
const ROW_BYTES: usize = 256;
/// Directories looked into for single-child chains, at most.
const MAX_CHAIN_LOOKUPS: usize = 300;
/// A tree larger than this holds more than one entry, so it starts no single-child chain: one
/// directory entry is `40000 `, the name, a NUL and the id (32 bytes at most), and a name
/// longer than `PATH_MAX` (4,096) could not be checked out anywhere. The listing has every
/// entry's size already, so the large directories (most of a big project's) are not read.
const MAX_SINGLE_CHILD_TREE: u64 = 6 + 4096 + 1 + 32;
/// Blobs larger than this are not read for display at all.
const MAX_BLOB_READ: u64 = 32 << 20;
/// Text shown of a blob, at most: bytes and lines.
const MAX_TEXT_SHOWN: usize = 1 << 20;
const MAX_LINES_SHOWN: usize = 20_000;
/// Bytes of a binary blob shown as a hex dump, at most.
const MAX_HEX_SHOWN: usize = 64 << 10;

/// Links of one page that all carry the request's `h` and `id`.
struct TreeLinks<'c, 'a> {
    ctx: &'c RepoCtx<'a>,
}

impl TreeLinks<'_, '_> {
    fn page(&self, page: &str, path: Option<&[u8]>) -> String {
        shared::rev_link(self.ctx, page, path)
    }
}

/// One row of a listing; its name links to the entry's tree page unless it is a submodule.
struct Row<'e> {
    mode: &'static str,
    label: std::borrow::Cow<'e, str>,
    kind: RowKind<'e>,
    size: u64,
    /// The entry's path, escaped for links (URL, then HTML): its name and buttons link to it.
    path: String,
    /// Which of the buttons besides log (and stats) the row has.
    plain: bool,
    blame: bool,
}

enum RowKind<'e> {
    /// A directory, followed by the chain of single directories below it (`a / b / c`).
    Dir(Vec<ChainLink>),
    /// A file: `ext` is its name's extension (a CSS class), `symlink` a link's target.
    File {
        ext: Option<std::borrow::Cow<'e, str>>,
        symlink: Option<SymlinkTarget>,
    },
    /// A submodule, linked where a module-link format says how; ` @ <7 hex>`.
    Module { href: Option<String>, rev: String },
}

/// One further directory of a chain: its tree page and its name.
struct ChainLink {
    href: String,
    label: String,
}

struct SymlinkTarget {
    label: String,
    href: Option<String>,
}

#[derive(Template)]
#[template(path = "tree.html")]
struct Listing<'e> {
    rows: Vec<Row<'e>>,
    omitted: usize,
    buttons: ButtonLinks,
}

/// What the rows' links are: `<base><page>/<row path><query>`, built (and HTML-escaped) once
/// a listing.
struct ButtonLinks {
    base: String,
    /// The query of the name links and the log, plain and blame buttons (`h` and `id`).
    rev: String,
    /// The query of the stats button (`h` only), when stats are on.
    stats: Option<String>,
}

/// The hex dump of binary files: offset, hex column, ascii column.
struct HexRow {
    offset: String,
    hex: String,
    ascii: String,
}

enum BlobBody {
    Text {
        line_numbers: Option<usize>,
        /// The text escaped, or the source-filter's output.
        html: String,
    },
    Binary(Vec<HexRow>),
    TooLarge {
        size_kb: u64,
        limit_kb: u64,
    },
    /// Too large to read for display at all.
    Omitted,
}

#[derive(Template)]
#[template(path = "blob_view.html")]
struct BlobView {
    id: String,
    plain_href: String,
    blame_href: Option<String>,
    body: BlobBody,
    /// Set when only the beginning is shown.
    cut: Option<String>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let commit = shared::page_commit(ctx)?;
    let root = git::commit::read_commit(ctx.repo, commit)?.tree;
    let path = ctx.path();
    let links = TreeLinks { ctx };
    let mut frame = Frame::repo(ctx, "tree");
    if let Some(p) = &ctx.req.path {
        frame.crumbs = shared::path_crumbs(p, |prefix| links.page("tree", prefix));
        frame.title = frame::page_title(ctx, "tree", Some(&shared::path_title(p)));
    }
    let html = match gtree::find(ctx.repo, root, path)? {
        Some(Found::Tree(id)) => {
            let entries = gtree::entries(ctx.repo, id)?;
            let body = listing(ctx, &links, &entries, path)?;
            frame::wrap_sized(ctx.site, &frame, &body, body.rows.len() * ROW_BYTES)?
        }
        Some(Found::Blob { id, .. }) => {
            let body = blob_view(ctx, &links, id, path)?;
            frame::wrap(ctx.site, &frame, &body)?
        }
        Some(Found::Submodule(_)) | None => {
            return Err(PageError::NotFound("Path not found".into()));
        }
    };
    Ok(Response::html(html))
}

fn join(dir: &BStr, name: &[u8]) -> Vec<u8> {
    let mut p: Vec<u8> = gtree::components(dir)
        .flat_map(|c| [c.as_bytes(), b"/"])
        .flatten()
        .copied()
        .collect();
    p.extend_from_slice(name);
    p
}

fn listing<'e>(
    ctx: &RepoCtx<'_>,
    links: &TreeLinks<'_, '_>,
    entries: &'e [Entry],
    dir: &BStr,
) -> Result<Listing<'e>, GitError> {
    let omitted = entries.len().saturating_sub(MAX_ROWS);
    let mut chain_lookups = 0;
    let mut rows = Vec::with_capacity(entries.len().min(MAX_ROWS));
    // each entry's path: the directory's, then the name (one buffer for all rows)
    let mut full = join(dir, b"");
    let dir_len = full.len();
    let shown = &entries[..entries.len().min(MAX_ROWS)];
    for (e, size) in shown.iter().zip(entry_sizes(ctx, shown)?) {
        full.truncate(dir_len);
        full.extend_from_slice(&e.name);
        let kind = if e.mode.is_tree() {
            let chain = if size > MAX_SINGLE_CHILD_TREE {
                Vec::new()
            } else if chain_lookups < MAX_CHAIN_LOOKUPS {
                chain_lookups += 1;
                single_child_chain(ctx, e.id)?
            } else {
                Vec::new()
            };
            RowKind::Dir(chain_links(links, &full, &chain))
        } else if e.mode.is_commit() {
            module_kind(ctx, e, &full)
        } else {
            RowKind::File {
                ext: extension(e.name.as_bstr()),
                symlink: if e.mode.is_link() {
                    Some(symlink_target(ctx, links, e.id, dir)?)
                } else {
                    None
                },
            }
        };
        let is_file = matches!(kind, RowKind::File { .. });
        rows.push(Row {
            mode: mode_string(e.mode),
            label: e.name.to_str_lossy(),
            size,
            path: html::escape(&escape_path(&full)),
            plain: !matches!(kind, RowKind::Module { .. }),
            // No blame for directories and submodules (cgit's blame button there is a 404).
            blame: is_file && ctx.state.config.opts.enable_blame,
            kind,
        });
    }
    Ok(Listing {
        rows,
        omitted,
        buttons: button_links(ctx),
    })
}

/// The size of each entry's object, in the entries' order; 0 for a submodule, whose commit is
/// not in this repository.
fn entry_sizes(ctx: &RepoCtx<'_>, entries: &[Entry]) -> Result<Vec<u64>, GitError> {
    let objects: Vec<ObjectId> = entries
        .iter()
        .filter(|e| !e.mode.is_commit())
        .map(|e| e.id)
        .collect();
    let mut sizes = ctx.object_sizes(&objects)?.into_iter();
    Ok(entries
        .iter()
        .map(|e| {
            if e.mode.is_commit() {
                0
            } else {
                sizes.next().unwrap_or_default()
            }
        })
        .collect())
}

/// The chain of single directories below the directory `tree`. Whether a tree is such a
/// link is remembered by id across requests: most directories are not, and finding that out
/// means reading them.
fn single_child_chain(ctx: &RepoCtx<'_>, tree: ObjectId) -> Result<Vec<Entry>, GitError> {
    let memo = &ctx.site.single_child_trees;
    if memo.get(tree) == Some(false) {
        return Ok(Vec::new());
    }
    let chain = gtree::single_child_chain(ctx.repo, tree, 32)?;
    memo.insert(tree, !chain.is_empty());
    Ok(chain)
}

fn button_links(ctx: &RepoCtx<'_>) -> ButtonLinks {
    let links = ctx.links();
    let head = Some(ctx.head.as_str());
    let id = ctx.req.query.id.as_deref().filter(|id| *id != ctx.head);
    let rev_args = id.map(|id| [("id", id)]);
    let rev_args: &[(&str, &str)] = rev_args.as_ref().map_or(&[], |a| &a[..]);
    let stats_on = ctx.state.config.opts.max_stats.is_some();
    ButtonLinks {
        base: html::escape(&links.base()),
        rev: html::escape(&links.query(head, rev_args)),
        stats: stats_on.then(|| html::escape(&links.query(head, &[]))),
    }
}

/// The links of the directories of a chain below `full`.
fn chain_links(links: &TreeLinks<'_, '_>, full: &[u8], chain: &[Entry]) -> Vec<ChainLink> {
    let mut path = full.to_vec();
    let mut out = Vec::with_capacity(chain.len());
    for c in chain {
        path.push(b'/');
        path.extend_from_slice(&c.name);
        out.push(ChainLink {
            href: links.page("tree", Some(&path)),
            label: c.name.to_str_lossy().into_owned(),
        });
    }
    out
}

/// A file name's extension, which cgit adds to the link's classes (`ls-blob c`).
fn extension(name: &BStr) -> Option<std::borrow::Cow<'_, str>> {
    let dot = name.rfind_byte(b'.')?;
    let ext = &name[dot + 1..];
    (!ext.is_empty()).then(|| ext.to_str_lossy())
}

fn module_kind<'e>(ctx: &RepoCtx<'_>, e: &Entry, full: &[u8]) -> RowKind<'e> {
    let cfg = &ctx.state.config;
    let hex = e.id.to_string();
    let path = full.to_str_lossy();
    let href = match cfg.module_links.get(path.as_ref()) {
        Some(format) => Some(format.replacen("%s", &hex, 1)),
        None => cfg
            .opts
            .module_link
            .as_ref()
            .map(|format| format.replacen("%s", &path, 1).replacen("%s", &hex, 1)),
    };
    RowKind::Module {
        href,
        rev: hex[..7].to_string(),
    }
}

/// A symlink's target, linked when it stays inside the repository.
fn symlink_target(
    ctx: &RepoCtx<'_>,
    links: &TreeLinks<'_, '_>,
    id: ObjectId,
    dir: &BStr,
) -> Result<SymlinkTarget, GitError> {
    if ctx.repo.object_size(&id)? > 4096 {
        return Ok(SymlinkTarget {
            label: "(long target)".into(),
            href: None,
        });
    }
    let target = gtree::read_blob(ctx.repo, id)?.data;
    let href = resolve_relative(dir, &target).map(|p| links.page("tree", Some(&p)));
    Ok(SymlinkTarget {
        label: target.to_str_lossy().into_owned(),
        href,
    })
}

/// `target` relative to `dir`, normalized; `None` when absolute or leaving the root.
fn resolve_relative(dir: &BStr, target: &[u8]) -> Option<Vec<u8>> {
    if target.starts_with(b"/") {
        return None;
    }
    let mut parts: Vec<&[u8]> = gtree::components(dir).map(|c| c.as_bytes()).collect();
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join(&b'/'))
}

/// cgit's mode column: permission bits of the git mode.
fn mode_string(mode: EntryMode) -> &'static str {
    if mode.is_tree() {
        "d---------"
    } else if mode.is_commit() {
        "m---------"
    } else if mode.is_link() {
        "l---------"
    } else if mode.is_executable() {
        "-rwxr-xr-x"
    } else {
        "-rw-r--r--"
    }
}

fn blob_view(
    ctx: &RepoCtx<'_>,
    links: &TreeLinks<'_, '_>,
    id: ObjectId,
    path: &BStr,
) -> Result<BlobView, GitError> {
    let g = &ctx.site.config.globals;
    let size = ctx.repo.object_size(&id)?;
    let path = path.as_bytes();
    let mut view = BlobView {
        id: id.to_string(),
        plain_href: links.page("plain", Some(path)),
        blame_href: None,
        body: BlobBody::Binary(Vec::new()),
        cut: None,
    };
    let limit_kb = g.max_blob_size;
    if limit_kb > 0 && size / 1024 > limit_kb {
        view.body = BlobBody::TooLarge {
            size_kb: size / 1024,
            limit_kb,
        };
        return Ok(view);
    }
    if size > MAX_BLOB_READ {
        view.cut = Some(format!(
            "This file is {size} bytes, too large to show here; use the plain link."
        ));
        view.body = BlobBody::Omitted;
        return Ok(view);
    }
    let data = gtree::read_blob(ctx.repo, id)?.data;
    if gtree::is_binary(&data) {
        let shown = data.len().min(MAX_HEX_SHOWN);
        if shown < data.len() {
            view.cut = Some(format!(
                "Showing the first {shown} of {} bytes.",
                data.len()
            ));
        }
        view.body = BlobBody::Binary(hex_dump(&data[..shown]));
        return Ok(view);
    }
    if ctx.state.config.opts.enable_blame {
        view.blame_href = Some(links.page("blame", Some(path)));
    }
    let shown = &data[..text_cut(&data)];
    if shown.len() < data.len() {
        view.cut = Some(format!(
            "Showing the first {} of {} bytes.",
            shown.len(),
            data.len()
        ));
    }
    let lines = shown.iter().filter(|b| **b == b'\n').count()
        + usize::from(shown.last().is_some_and(|b| *b != b'\n'));
    view.body = BlobBody::Text {
        line_numbers: g.enable_tree_linenumbers.then_some(lines),
        html: super::parts::filter::source_html(ctx, path, id, shown),
    };
    Ok(view)
}

/// Where to cut a text for display: after at most `MAX_LINES_SHOWN` lines and
/// `MAX_TEXT_SHOWN` bytes, at a line end when there is one.
fn text_cut(data: &[u8]) -> usize {
    let limit = data.len().min(MAX_TEXT_SHOWN);
    let by_lines = data[..limit]
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(MAX_LINES_SHOWN - 1)
        .map(|(i, _)| i + 1);
    match by_lines {
        Some(end) => end,
        None if limit == data.len() => limit,
        None => data[..limit].rfind_byte(b'\n').map_or(limit, |i| i + 1),
    }
}

/// 32 bytes a row: offset, hex bytes (a gap after 16), printable ASCII or `.`.
fn hex_dump(data: &[u8]) -> Vec<HexRow> {
    data.chunks(32)
        .enumerate()
        .map(|(row, chunk)| {
            let mut hex = String::with_capacity(100);
            for (i, b) in chunk.iter().enumerate() {
                if i == 16 {
                    hex.push_str("   ");
                }
                hex.push_str(&format!(" {b:02x}"));
            }
            hex.push(' ');
            let ascii = chunk
                .iter()
                .map(|b| {
                    if b.is_ascii_graphic() || *b == b' ' {
                        *b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            HexRow {
                offset: format!("{:04x}", row * 32),
                hex,
                ascii,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_targets_resolve_inside_the_tree() {
        assert_eq!(resolve_relative(b"a/b".as_bstr(), b"../c").unwrap(), b"a/c");
        assert_eq!(
            resolve_relative(b"".as_bstr(), b"src/x.rs").unwrap(),
            b"src/x.rs"
        );
        assert!(resolve_relative(b"a".as_bstr(), b"../../etc").is_none());
        assert!(resolve_relative(b"".as_bstr(), b"/etc/passwd").is_none());
    }

    #[test]
    fn extensions_are_what_follows_the_last_dot() {
        let ext = |name: &[u8]| extension(name.as_bstr()).map(|e| e.into_owned());
        assert_eq!(ext(b"main.c").as_deref(), Some("c"));
        assert_eq!(ext(b"a.tar.gz").as_deref(), Some("gz"));
        assert_eq!(ext(b".bashrc").as_deref(), Some("bashrc"));
        assert_eq!(ext(b"Makefile"), None);
        assert_eq!(ext(b"trailing."), None);
        assert_eq!(ext(b"caf\xe9.t\xffxt").as_deref(), Some("t\u{fffd}xt"));
    }

    #[test]
    fn hex_dump_rows_like_cgit() {
        let rows = hex_dump(b"\x00\x01binary\xff");
        assert_eq!(rows[0].offset, "0000");
        assert_eq!(rows[0].hex, " 00 01 62 69 6e 61 72 79 ff ");
        assert_eq!(rows[0].ascii, "..binary.");
        let rows = hex_dump(&[0x41; 40]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].offset, "0020");
        assert!(rows[0].hex.contains(" 41    41 "));
    }
}
