//! What a request asks for, independent of HTTP: the cgit URL parsed into repository, page,
//! path and query parameters ([`url::parse`]), and the page table ([`page`]).

pub mod page;
pub mod url;

pub use page::Page;

use gix::bstr::BString;

/// cgit's query parameters, already decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Query {
    pub h: Option<String>,
    pub id: Option<String>,
    pub id2: Option<String>,
    pub ofs: i64,
    pub q: Option<String>,
    pub qt: Option<String>,
    pub s: Option<String>,
    pub showmsg: bool,
    pub period: Option<String>,
    /// 0 unified, 1 side-by-side, 2 stat only; `None` when absent.
    pub dt: Option<u8>,
    pub context: Option<i64>,
    pub ignorews: bool,
    pub follow: bool,
    pub all: bool,
}

/// What a request asks for, independent of HTTP.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PageRequest {
    /// The url of the repository addressed, if any.
    pub repo: Option<String>,
    /// For a non-repository url: the prefix the index is filtered by.
    pub prefix: Option<String>,
    /// The page asked for ([`Page::default_for`] when the URL names none).
    pub page: Page,
    /// Whether the URL named the page (cgit's TTL choice tells `/repo/` from `/repo/summary`).
    pub page_named: bool,
    /// The path after the page (raw bytes, may be non-UTF-8), without trailing `/`.
    pub path: Option<BString>,
    /// Whether the request path ended with `/` (about redirects on its absence).
    pub trailing_slash: bool,
    pub query: Query,
    /// `Host` header, for absolute URLs (atom, clone URLs).
    pub host: Option<String>,
    /// The request target as received (path and query), for self links.
    pub target: String,
    /// The `If-None-Match` header, for conditional requests.
    pub if_none_match: Option<String>,
    /// Whether a surrogate in front of us processes ESI (`Surrogate-Capability: …ESI/1.0`).
    pub surrogate_esi: bool,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest {
            repo: None,
            prefix: None,
            page: Page::Index,
            page_named: false,
            path: None,
            trailing_slash: false,
            query: Query::default(),
            host: None,
            target: String::new(),
            if_none_match: None,
            surrogate_esi: false,
        }
    }
}

impl PageRequest {
    /// A request for `page` of repository `repo` (for tests, benchmarks and the CLI).
    pub fn for_repo(repo: &str, page: Page) -> PageRequest {
        PageRequest {
            repo: Some(repo.to_string()),
            page,
            page_named: true,
            ..PageRequest::default()
        }
    }
}
