//! HTTP caching decisions for rendered pages: weak ETags from what a page depends on, and
//! Cache-Control from cgit's TTL classes — `immutable` only when every revision in the URL is a
//! full object id.

use crate::config::Globals;
use crate::pages::PageRequest;
use crate::repos::{ContentHash, RepoState};
use crate::request::page::TtlClass;

/// A weak validator for a repository page, from content only, so that every instance serving
/// the same repositories with the same configuration gives the same one: the cgitd version, the
/// repository's configuration hash (globals and its options, not its path), the request target
/// and host (clone URLs and feeds name it), the content hash of the ref snapshot and whether
/// ESI is on. No inode, mtime or process-local counter enters it.
pub fn repo_etag(state: &RepoState, req: &PageRequest, refs_version: u64) -> String {
    let mut h = ContentHash::new();
    h.str(env!("CARGO_PKG_VERSION"))
        .u128(state.config_hash())
        .str(&req.target)
        .opt_str(req.host.as_deref())
        .u64(refs_version)
        .u64(req.surrogate_esi.into());
    format!("W/\"{}\"", short(h.finish()))
}

/// The validator of a repository-neutral fragment: its identity (ids, options, path).
pub fn fragment_etag(identity: &str) -> String {
    let mut h = ContentHash::new();
    h.str(env!("CARGO_PKG_VERSION")).str(identity);
    format!("\"{}\"", short(h.finish()))
}

/// A weak validator from a rendered body, for pages without a cheaper one (the index): the
/// bytes are the content, so equal pages from any instance validate each other.
pub fn body_etag(body: &[u8]) -> String {
    let mut h = ContentHash::new();
    h.str(env!("CARGO_PKG_VERSION")).bytes(body);
    format!("W/\"{}\"", short(h.finish()))
}

/// 96 of the hash's bits in hex: short enough for a header, far from colliding for one URL.
fn short(hash: u128) -> String {
    format!("{:024x}", hash >> 32)
}

/// Whether an `If-None-Match` header value matches `etag` (weak comparison).
pub fn matches(if_none_match: Option<&str>, etag: &str) -> bool {
    let Some(header) = if_none_match else {
        return false;
    };
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
    header
        .split(',')
        .any(|t| t.trim() == "*" || bare(t) == bare(etag))
}

fn is_full_id(rev: &str) -> bool {
    (rev.len() == 40 || rev.len() == 64) && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether every revision named by the URL is a full object id (and there is one).
pub fn names_only_full_ids(req: &PageRequest) -> bool {
    let q = &req.query;
    let revs = [&q.h, &q.id, &q.id2];
    let any = revs.iter().any(|r| r.is_some());
    let range_search = q.qt.as_deref() == Some("range") && q.q.is_some();
    any && !range_search && revs.iter().all(|r| r.as_deref().is_none_or(is_full_id))
}

/// The Cache-Control value for a successful page.
pub fn cache_control(g: &Globals, req: &PageRequest) -> String {
    if req.repo.is_some() && names_only_full_ids(req) {
        return "public, max-age=31536000, immutable".into();
    }
    let ttl = ttl_minutes(g, req);
    match ttl {
        0 => "no-cache".into(),
        t if t < 0 => "public, max-age=31536000".into(),
        t => format!("public, max-age={}", t * 60),
    }
}

/// cgit's TTL for a request (cgitrc(5), "cache-*-ttl"), from its page's row; `id=` only counts as
/// static when it is a full object id (handled by the caller).
fn ttl_minutes(g: &Globals, req: &PageRequest) -> i64 {
    let q = &req.query;
    match req.page.row().ttl {
        TtlClass::Root => g.ttl.root,
        TtlClass::About => g.ttl.about,
        TtlClass::Snapshot => g.ttl.snapshot,
        TtlClass::ByRevision if !req.page_named => g.ttl.repo,
        TtlClass::ByRevision if q.h.is_some() || q.id.is_some() || q.id2.is_some() => g.ttl.dynamic,
        TtlClass::ByRevision => g.ttl.repo,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(repo: bool, page: Option<&str>, h: Option<&str>, id: Option<&str>) -> PageRequest {
        let mut r = PageRequest {
            repo: repo.then(|| "r".into()),
            page: match page {
                Some(name) => crate::request::Page::from_name(name, repo).unwrap(),
                None => crate::request::Page::default_for(repo),
            },
            page_named: page.is_some(),
            ..PageRequest::default()
        };
        r.query.h = h.map(Into::into);
        r.query.id = id.map(Into::into);
        r
    }

    #[test]
    fn immutable_only_for_full_ids() {
        let g = Globals::default();
        let full = "0123456789abcdef0123456789abcdef01234567";
        let cc = |r: &PageRequest| cache_control(&g, r);
        assert_eq!(
            cc(&req(true, Some("commit"), None, Some(full))),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(
            cc(&req(true, Some("commit"), None, Some("master"))),
            "public, max-age=300"
        );
        assert_eq!(
            cc(&req(true, Some("commit"), Some("dev"), Some(full))),
            "public, max-age=300"
        );
        assert_eq!(
            cc(&req(true, Some("log"), None, None)),
            "public, max-age=300"
        );
        assert_eq!(cc(&req(false, None, None, None)), "public, max-age=300");
        assert_eq!(
            cc(&req(true, Some("about"), None, None)),
            "public, max-age=900"
        );
    }

    #[test]
    fn if_none_match_comparison_is_weak_and_lists_work() {
        assert!(matches(Some("W/\"ab\""), "W/\"ab\""));
        assert!(matches(Some("\"x\", \"ab\""), "W/\"ab\""));
        assert!(matches(Some("*"), "W/\"ab\""));
        assert!(!matches(Some("\"abc\""), "W/\"ab\""));
        assert!(!matches(None, "W/\"ab\""));
    }
}
