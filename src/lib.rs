//! cgitd: a resident, cgit-compatible git web frontend.
//!
//! Dependencies point one way: `http → pages → repos → git`, and `http → smart → repos → git`
//! for git's smart HTTP protocol, with `config`, `request`, `filter` and `cache` beside them.
//! `git` is plumbing over gix and imports nothing of ours but the leaf [`byte_lru`] (the
//! eviction rule every cache shares); [`confined_files`] is another leaf.
//!
//! # Request flow
//!
//! A URL becomes bytes like this:
//!
//! 1. [`http::serve`] accepts the connection; every request reaches `http::handle`, which
//!    answers static files and `/metrics` itself, and hands git's smart HTTP requests
//!    (`info/refs?service=git-upload-pack`, `git-upload-pack`) to `http::smart`.
//! 2. [`request::url::parse`] turns the path and query into a [`request::PageRequest`]: the
//!    repository (longest configured url prefix), the [`request::Page`] from the page table,
//!    the path after it and cgit's query parameters. An unknown page is a 404 here.
//! 3. [`pages::cost_class`] decides from the page's row, its parameters and what is known of
//!    the repository whether the work is cheap or expensive — before any git work. With an
//!    `auth-filter`, `http::auth` asks it about the request's cookie first.
//!    A repeated page is answered here from [`http::response_cache`] (a lookup and one write).
//! 4. `http::page::render_scheduled` hands the render to [`http::scheduler::Scheduler::run`] in that
//!    class (a request identical to one already rendering waits for it instead, through
//!    [`http::single_flight::SingleFlight`]); a request that cannot get a worker in time gets
//!    a 503 with `Retry-After`.
//! 5. On a git worker, [`pages::render`] finds the repository in [`repos::Repos`], takes a
//!    warm gix handle and the current ref snapshot ([`repos::RepoState::refs`]), answers
//!    `If-None-Match` with a 304, and dispatches on the page with one exhaustive match to its
//!    module (`pages::log::render`, …), which asks `git::*` for plain data and renders an
//!    askama template inside the frame into one buffer.
//! 6. Back in `http::page` the page is kept in the response cache when it may be, cut to a
//!    byte range when one is asked for, compressed once, and `http::to_http` sets status and
//!    headers and sends the buffer, or streams a file body (snapshots, clone files) from a
//!    blocking thread.

pub mod byte_lru;
pub mod cache;
pub mod config;
pub mod confined_files;
pub mod filter;
pub mod git;
pub mod http;
pub mod pages;
pub mod repos;
pub mod request;
pub mod smart;
