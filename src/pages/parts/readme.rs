//! Readmes: finding a repository's readme from its `readme` specs (`ref:path`, `:path`, or a
//! file inside the repository directory), and rendering one as sanitized HTML — Markdown through
//! pulldown-cmark and ammonia, other text in `<pre>`, or the output of an `about-filter`.

use crate::git::tree::{self as gtree, Found};
use crate::pages::RepoCtx;
use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Readmes larger than this are not shown.
const MAX_README: u64 = 4 << 20;

/// Where a readme lives.
pub enum Location {
    /// A blob in the repository at a revision.
    Tree {
        rev: String,
        blob: ObjectId,
        path: BString,
    },
    /// A file inside the repository directory (canonical path).
    File(PathBuf),
    /// A file that exists but resolves outside the repository directory: never served.
    Outside,
}

impl Location {
    /// Whether the readme can be shown (the about tab appears only then).
    pub fn is_servable(&self) -> bool {
        !matches!(self, Location::Outside)
    }

    /// The readme's file name as given to the about-filter and used to pick a renderer.
    pub fn name(&self) -> String {
        match self {
            Location::Tree { path, .. } => path.to_str_lossy().into_owned(),
            Location::File(p) => p.display().to_string(),
            Location::Outside => String::new(),
        }
    }
}

/// The first readme spec of the repository that names an existing file.
pub fn locate(ctx: &RepoCtx<'_>) -> Option<Location> {
    ctx.state
        .config
        .opts
        .readme
        .iter()
        .find_map(|spec| locate_one(ctx, spec))
}

fn locate_one(ctx: &RepoCtx<'_>, spec: &str) -> Option<Location> {
    match spec.split_once(':') {
        Some((rev, path)) if !path.is_empty() && !rev.contains('/') => {
            let rev = if rev.is_empty() {
                ctx.head.as_str()
            } else {
                rev
            };
            let commit = crate::git::rev::resolve_commit(ctx.repo, rev).ok()?;
            let tree = crate::git::commit::read_commit(ctx.repo, commit).ok()?.tree;
            match gtree::find(ctx.repo, tree, path.as_bytes().as_bstr()).ok()?? {
                Found::Blob { id, .. } => Some(Location::Tree {
                    rev: rev.to_string(),
                    blob: id,
                    path: path.trim_start_matches('/').into(),
                }),
                _ => None,
            }
        }
        _ => on_disk(ctx.state.git_dir(), Path::new(spec)),
    }
}

/// `spec` (relative to `dir`, or absolute) as a canonical path when it is a regular file inside
/// `dir` once every symlink is resolved; `Outside` when it exists elsewhere.
fn on_disk(dir: &Path, spec: &Path) -> Option<Location> {
    let root = dir.canonicalize().ok()?;
    let file = root.join(spec).canonicalize().ok()?;
    if !file.starts_with(&root) {
        return Some(Location::Outside);
    }
    file.is_file().then_some(Location::File(file))
}

/// The readme's bytes (bounded).
pub fn read(ctx: &RepoCtx<'_>, loc: &Location) -> Option<Vec<u8>> {
    match loc {
        Location::Tree { blob, .. } => {
            (ctx.repo.object_size(blob).ok()? <= MAX_README).then_some(())?;
            gtree::read_blob(ctx.repo, *blob).ok().map(|b| b.data)
        }
        Location::File(path) => read_file(path),
        Location::Outside => None,
    }
}

/// A readme file from disk (bounded).
pub fn read_file(path: &Path) -> Option<Vec<u8>> {
    (std::fs::metadata(path).ok()?.len() <= MAX_README).then_some(())?;
    std::fs::read(path).ok()
}

/// Whether a readme is Markdown: by extension, else by a first heading or a link.
pub fn is_markdown(name: &str, text: &str) -> bool {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if let Some(ext) = ext {
        return matches!(ext.as_str(), "md" | "markdown" | "mdown" | "mkd" | "mkdn");
    }
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    first.starts_with("# ") || text.contains("](")
}

/// Markdown to sanitized HTML; relative URLs go through `rewrite` (`None` removes them).
pub fn markdown_html(text: &str, rewrite: &(dyn Fn(&str) -> Option<String> + Sync)) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut raw = String::with_capacity(text.len() * 2);
    html::push_html(&mut raw, Parser::new_ext(text, options));
    sanitize(&raw, rewrite)
}

/// Removes scripts, event handlers, `javascript:` URLs and the like; keeps `class` for
/// highlighting.
pub fn sanitize(html: &str, rewrite: &(dyn Fn(&str) -> Option<String> + Sync)) -> String {
    ammonia::Builder::default()
        .add_generic_attributes(["class"])
        .url_relative(ammonia::UrlRelative::Custom(Box::new(Relative(rewrite))))
        .clean(html)
        .to_string()
}

/// Keeps fragment and absolute-path URLs; hands other relative URLs to the rewriter.
struct Relative<'r>(&'r (dyn Fn(&str) -> Option<String> + Sync));

impl<'a, 'r: 'a> ammonia::UrlRelativeEvaluate<'a> for Relative<'r> {
    fn evaluate<'url>(&self, url: &'url str) -> Option<Cow<'url, str>> {
        if url.starts_with('#') || url.starts_with('/') {
            return Some(Cow::Borrowed(url));
        }
        (self.0)(url).map(Cow::Owned)
    }
}

/// `target` (a relative URL) resolved against `dir`: the normalized path and any `?`/`#` tail;
/// `None` when it leaves the root.
pub fn resolve_link(dir: &[u8], target: &str) -> Option<(Vec<u8>, String)> {
    let split = target.find(['?', '#']).unwrap_or(target.len());
    let (path, tail) = target.split_at(split);
    let decoded = crate::request::url::percent_decode(path.as_bytes(), false);
    let mut parts: Vec<&[u8]> = gtree::components(dir.as_bstr())
        .map(|c| c.as_bytes())
        .collect();
    for part in decoded.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some((parts.join(&b'/'), tail.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(dir: &[u8]) -> impl Fn(&str) -> Option<String> + Sync + '_ {
        move |url| {
            resolve_link(dir, url).map(|(p, tail)| format!("/r/plain/{}{tail}", p.to_str_lossy()))
        }
    }

    #[test]
    fn markdown_is_rendered_and_sanitized() {
        let html = markdown_html(
            "# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) \
             <img src=x onerror=alert(1)> [docs](docs/a.md#part) ![logo](../img/l.png) \
             [abs](https://example.com/) [top](#title)",
            &plain(b"sub"),
        );
        assert!(html.contains("<h1>Title</h1>"));
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
        assert!(
            html.contains("href=\"/r/plain/sub/docs/a.md#part\""),
            "{html}"
        );
        assert!(html.contains("src=\"/r/plain/img/l.png\""), "{html}");
        assert!(html.contains("href=\"https://example.com/\""));
        assert!(html.contains("href=\"#title\""));
    }

    #[test]
    fn links_cannot_climb_out() {
        assert!(resolve_link(b"", "../../etc/passwd").is_none());
        assert_eq!(
            resolve_link(b"a/b", "../c%20d?x=1").unwrap(),
            (b"a/c d".to_vec(), "?x=1".into())
        );
    }

    #[test]
    fn markdown_is_detected() {
        assert!(is_markdown("README.md", ""));
        assert!(!is_markdown("README.txt", "# heading"));
        assert!(is_markdown("README", "\n# Heading\ntext"));
        assert!(!is_markdown("README", "plain text"));
    }
}
