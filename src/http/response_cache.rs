//! Whole rendered responses and their compressed forms, so that a repeated page costs a lookup
//! and one write: no git work, no scheduler, no recompression.
//!
//! Key: the configuration generation, the repository's ref snapshot version (known without a
//! git handle: [`crate::repos::RepoState::refs_version`], the same rate-limited stamp check the
//! snapshot uses), the request target (every parameter), the `Host` where the page shows it
//! (atom, clone URLs made with `$HTTP_HOST`), whether a surrogate processes ESI, and the content
//! coding. A push changes the ref version, so old entries become unreachable (and age out of
//! the LRU); a reload changes the generation and clears the cache.
//!
//! A page is kept from its second render, or its first when that took
//! [`crate::cache::COSTLY`] or more ([`crate::cache::Admission`]): a crawler's distinct URLs
//! neither evict the pages people come back to nor pay for being kept.
//!
//! Only complete, public, successful, buffered pages are kept: status 200, a `Body::Full`, no
//! `no-cache`/`no-store`/`private` (partial pages cut short by a budget say `no-cache`). An
//! entry lives no longer than the `max-age` it was sent with (relative dates stay as fresh as
//! cgit's own cache would keep them); the index, which has no ref version, at most
//! [`INDEX_FRESHNESS`].
//!
//! A compressed variant made with a page's first answer is made at the cheap level (a crawler
//! asks once); the first repeat has it remade at the stored level in the background.
//!
//! Bounded in bytes (bodies, headers and keys); one entry is at most a sixteenth of the budget.

use super::compress::{Coding, Effort};
use crate::byte_lru::ByteLru;
use crate::cache::Admission;
use crate::pages::parts::validators;
use crate::pages::{self, Page, PageRequest, Site};
use axum::http::{HeaderMap, HeaderValue, header};
use bytes::Bytes;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a cached index page is used: the same quarter second a ref snapshot is trusted.
pub const INDEX_FRESHNESS: Duration = Duration::from_millis(250);

/// What identifies one cached response.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    generation: u64,
    refs_version: u64,
    target: String,
    host: Option<String>,
    esi: bool,
    coding: Coding,
}

impl Key {
    /// The key for `req` in `coding`, when its page is one the cache keeps and its repository
    /// (if any) exists; `None` otherwise.
    pub fn for_request(site: &Site, req: &PageRequest, coding: Coding) -> Option<Key> {
        if !cacheable_page(req.page) {
            return None;
        }
        let (refs_version, uses_host) = match &req.repo {
            None => (0, false),
            Some(url) => {
                let state = site.repos.get(url)?;
                let version = state.refs_version()?;
                let clone_url_has_host = state
                    .config
                    .opts
                    .clone_url
                    .as_deref()
                    .is_some_and(|t| t.contains("HTTP_HOST"));
                (version, req.page == Page::Atom || clone_url_has_host)
            }
        };
        Some(Key {
            generation: site.generation,
            refs_version,
            target: req.target.clone(),
            host: if uses_host { req.host.clone() } else { None },
            esi: req.surrogate_esi,
            coding,
        })
    }

    /// Whether `page`, rendered for `req` while the ref version was not known yet (the refs
    /// had not been read, or had changed), was rendered from the version this key names — its
    /// ETag says so — and may be kept under it.
    pub fn rendered_from(&self, site: &Site, req: &PageRequest, page: &pages::Response) -> bool {
        let Some(state) = req.repo.as_deref().and_then(|url| site.repos.get(url)) else {
            return false;
        };
        let etag = validators::repo_etag(state, req, self.refs_version);
        page.headers
            .iter()
            .any(|(name, value)| *name == "ETag" && *value == etag)
    }

    pub fn coding(&self) -> Coding {
        self.coding
    }

    /// The same response in another coding.
    pub fn with_coding(&self, coding: Coding) -> Key {
        Key {
            coding,
            ..self.clone()
        }
    }

    /// What names the page whatever its coding (borrowed, to be hashed).
    fn page(&self) -> impl Hash + '_ {
        let Key {
            generation,
            refs_version,
            target,
            host,
            esi,
            coding: _,
        } = self;
        (generation, refs_version, target, host, esi)
    }

    fn bytes(&self) -> usize {
        self.target.len() + self.host.as_ref().map_or(0, String::len) + 48
    }
}

/// The pages whose complete responses are kept.
pub fn cacheable_page(page: Page) -> bool {
    matches!(
        page,
        Page::Summary
            | Page::Refs
            | Page::Log
            | Page::Tree
            | Page::Blob
            | Page::Plain
            | Page::Tag
            | Page::Atom
            | Page::Patch
            | Page::Commit
            | Page::Diff
            | Page::Index
            | Page::CloneInfo
    )
}

/// A cached response: headers ready to send (content type, validators, cache control and, for
/// a compressed variant, `Content-Encoding` and `Vary`) and the body.
#[derive(Debug)]
pub struct Entry {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub content_type: String,
    pub etag: Option<String>,
    pub cache_control: Option<String>,
    born: Instant,
    lifetime: Duration,
    /// Set on a variant compressed cheaply (made with a page's first answer, which may be its
    /// only one) until a repeat claims it to make the variant at the stored level.
    cheap: AtomicBool,
}

impl Entry {
    /// The entry for a rendered page, if the page may be kept: 200, buffered, public,
    /// complete.
    pub fn from_page(page: &pages::Response, is_index: bool) -> Option<Entry> {
        if page.status != 200 {
            return None;
        }
        let pages::Body::Full(body) = &page.body else {
            return None;
        };
        let header = |name: &str| {
            page.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let cache_control = header("Cache-Control");
        let cc = cache_control.as_deref().unwrap_or("").to_ascii_lowercase();
        if cc.contains("no-cache")
            || cc.contains("no-store")
            || cc.contains("private")
            || header("Set-Cookie").is_some()
        {
            return None;
        }
        let mut lifetime = max_age(&cc).unwrap_or(Duration::ZERO);
        if is_index {
            lifetime = lifetime.min(INDEX_FRESHNESS);
        }
        if lifetime.is_zero() {
            return None;
        }
        let mut headers = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(&page.content_type) {
            headers.insert(header::CONTENT_TYPE, v);
        }
        for (name, value) in &page.headers {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append(*name, v);
            }
        }
        Some(Entry {
            headers,
            // A copy at the body's length: the rendered buffer was sized for an estimate and
            // grows by doubling, so it may be far larger than the page, and the cache counts
            // the page's bytes.
            body: Bytes::copy_from_slice(body),
            content_type: page.content_type.clone(),
            etag: header("ETag"),
            cache_control,
            born: Instant::now(),
            lifetime,
            cheap: AtomicBool::new(false),
        })
    }

    /// This response with `body`, which is its body in `coding` at `effort`, and with
    /// `Content-Encoding` and `Vary` (born with this entry, so it expires with it).
    pub fn variant(&self, coding: Coding, body: Bytes, effort: Effort) -> Entry {
        let mut headers = self.headers.clone();
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(coding.name()),
        );
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
        Entry {
            headers,
            body,
            content_type: self.content_type.clone(),
            etag: self.etag.clone(),
            cache_control: self.cache_control.clone(),
            born: self.born,
            lifetime: self.lifetime,
            cheap: AtomicBool::new(effort == Effort::Cheap),
        }
    }

    /// Whether this is a cheaply compressed variant that no repeat has claimed yet: true for
    /// one caller only, which is to replace it with the variant at the stored level.
    pub fn claim_recompression(&self) -> bool {
        self.cheap.swap(false, Ordering::Relaxed)
    }

    fn fresh(&self) -> bool {
        self.born.elapsed() < self.lifetime
    }

    fn bytes(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(n, v)| n.as_str().len() + v.len() + 16)
            .sum();
        self.body.len() + headers + 128
    }
}

/// `max-age=N` of a (lower-cased) Cache-Control value.
fn max_age(cc: &str) -> Option<Duration> {
    cc.split(',').find_map(|d| {
        let secs = d.trim().strip_prefix("max-age=")?.parse::<u64>().ok()?;
        Some(Duration::from_secs(secs))
    })
}

/// Counters (exported as metrics).
#[derive(Default, Debug, Clone)]
pub struct Stats {
    /// Requests answered from the cache (including 304s and variants compressed from a
    /// cached response).
    pub hits: Counter,
    /// Requests for a cacheable page that had to be rendered.
    pub misses: Counter,
    /// Entries dropped to stay within the byte budget.
    pub evictions: Counter,
    /// Bytes held now.
    pub bytes: Gauge,
}

/// The response cache (shared by all requests; cleared on reload).
pub struct ResponseCache {
    budget: usize,
    inner: Mutex<ByteLru<Key, Arc<Entry>>>,
    admission: Admission,
    pub stats: Stats,
}

impl ResponseCache {
    /// A cache of at most `budget` bytes; 0 keeps nothing.
    pub fn new(budget: usize) -> ResponseCache {
        ResponseCache {
            budget,
            inner: Mutex::new(ByteLru::new(budget, |k, e| k.bytes() + e.bytes())),
            admission: Admission::default(),
            stats: Stats::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Whether a page rendered for `key` in `cost` is kept (by the [`Admission`] rule; any
    /// coding of the page counts as the same page).
    pub fn admits(&self, key: &Key, cost: Duration) -> bool {
        self.admission.admits(&key.page(), cost)
    }

    /// The fresh entry under `key`, made most recently used.
    pub fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        let mut inner = self.lock();
        let entry = inner.get(key)?;
        if entry.fresh() {
            return Some(Arc::clone(entry));
        }
        inner.remove(key);
        self.stats.bytes.set(inner.bytes() as i64);
        None
    }

    /// Keeps `entry` under `key` (unless it is larger than a sixteenth of the budget),
    /// evicting the least recently used entries beyond the budget.
    pub fn put(&self, key: Key, entry: Arc<Entry>) {
        let size = key.bytes() + entry.bytes();
        if size > self.budget / 16 {
            return;
        }
        let mut inner = self.lock();
        let evicted = inner.put(key, entry);
        self.stats.evictions.inc_by(evicted as u64);
        self.stats.bytes.set(inner.bytes() as i64);
    }

    /// Drops everything (a reload makes every key unreachable anyway).
    pub fn clear(&self) {
        self.lock().clear();
        self.stats.bytes.set(0);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<Key, Arc<Entry>>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether an `If-None-Match` value matches `etag` (weak comparison, lists, `*`).
pub fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
    if_none_match
        .split(',')
        .any(|t| t.trim() == "*" || bare(t) == bare(etag))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &str, cc: &str) -> pages::Response {
        let mut p = pages::Response::html(body.to_string());
        p.headers.push(("Cache-Control", cc.to_string()));
        p.headers.push(("ETag", "W/\"x\"".to_string()));
        p
    }

    fn key(n: usize) -> Key {
        Key {
            generation: 0,
            refs_version: 1,
            target: format!("/r/tree/{n}"),
            host: None,
            esi: false,
            coding: Coding::Identity,
        }
    }

    #[test]
    fn a_kept_body_holds_the_page_not_its_render_buffer() {
        let mut buffer = String::with_capacity(256 << 10);
        buffer.push_str("<p>a small page</p>");
        let mut rendered = pages::Response::html(buffer);
        rendered
            .headers
            .push(("Cache-Control", "public, max-age=300".to_string()));
        let entry = Entry::from_page(&rendered, false).unwrap();
        drop(rendered);
        let body = entry.body.clone();
        drop(entry);
        assert_eq!(body.try_into_mut().unwrap().capacity(), 19);
    }

    #[test]
    fn only_complete_public_buffered_200s_are_kept() {
        assert!(Entry::from_page(&page("x", "public, max-age=300"), false).is_some());
        assert!(Entry::from_page(&page("x", "no-cache"), false).is_none());
        assert!(Entry::from_page(&page("x", "private, max-age=300"), false).is_none());
        let mut not_found = page("x", "public, max-age=300");
        not_found.status = 404;
        assert!(Entry::from_page(&not_found, false).is_none());
        let index = Entry::from_page(&page("x", "public, max-age=300"), true).unwrap();
        assert_eq!(index.lifetime, INDEX_FRESHNESS);
    }

    #[test]
    fn stays_within_its_byte_budget() {
        let cache = ResponseCache::new(200_000);
        let body = "y".repeat(10_000);
        for n in 0..100 {
            let e = Entry::from_page(&page(&body, "public, max-age=300"), false).unwrap();
            cache.put(key(n), Arc::new(e));
            assert!(cache.lock().bytes() <= 200_000);
        }
        assert!(cache.stats.evictions.get() > 70);
        assert!(cache.get(&key(99)).is_some());
        assert!(cache.get(&key(0)).is_none());
        // Larger than a sixteenth of the budget: not kept.
        let big = Entry::from_page(&page(&"z".repeat(20_000), "max-age=300"), false).unwrap();
        cache.put(key(1000), Arc::new(big));
        assert!(cache.get(&key(1000)).is_none());
    }

    #[test]
    fn a_page_asked_for_in_another_coding_counts_as_asked_before() {
        let cache = ResponseCache::new(1 << 20);
        let cheap = Duration::ZERO;
        assert!(!cache.admits(&key(1), cheap), "the first time");
        assert!(cache.admits(&key(1).with_coding(Coding::Gzip), cheap));
        assert!(
            !cache.admits(&key(2).with_coding(Coding::Gzip), cheap),
            "another page"
        );
    }

    #[test]
    fn expired_entries_are_misses() {
        let cache = ResponseCache::new(1 << 20);
        let mut e = Entry::from_page(&page("x", "max-age=300"), false).unwrap();
        e.lifetime = Duration::ZERO;
        cache.put(key(1), Arc::new(e));
        assert!(cache.get(&key(1)).is_none());
        assert!(cache.is_empty());
    }

    #[test]
    fn if_none_match() {
        assert!(etag_matches("W/\"ab\"", "W/\"ab\""));
        assert!(etag_matches("\"x\", \"ab\"", "W/\"ab\""));
        assert!(etag_matches("*", "W/\"ab\""));
        assert!(!etag_matches("\"abc\"", "W/\"ab\""));
    }
}
