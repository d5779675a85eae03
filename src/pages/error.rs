//! Error pages: cgit's statuses and wording, inside the normal page frame. Internal failures
//! keep their cause, which goes to the log with the request target; the client is told only
//! that the server failed, never a server path or a library's message.

use super::parts::frame::{self, Frame};
use super::{PageRequest, Response, Site};
use crate::git::GitError;
use crate::repos::RepoError;
use askama::Template;

/// The source of an internal failure.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a page could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Unavailable(String),
    /// The server failed; the cause is logged, not shown.
    #[error("{context}")]
    Internal {
        context: &'static str,
        #[source]
        source: Cause,
    },
    /// The server ran short of open files, disk space or memory: a transient overload, not a
    /// damaged repository. The cause is logged, not shown.
    #[error("{context}")]
    Exhausted {
        short: Exhaustion,
        context: &'static str,
        #[source]
        source: Cause,
    },
}

/// What a client is told of an internal failure.
const INTERNAL_MESSAGE: &str = "The server could not show this page; the failure has been logged.";

impl PageError {
    /// An internal failure, [`PageError::Exhausted`] when `source` comes from exhausted
    /// resources.
    pub fn internal(context: &'static str, source: impl Into<Cause>) -> PageError {
        let source = source.into();
        match exhaustion(source.as_ref()) {
            Some(short) => PageError::Exhausted {
                short,
                context,
                source,
            },
            None => PageError::Internal { context, source },
        }
    }

    /// What the server ran short of, if that is why the page failed.
    pub fn exhaustion(&self) -> Option<Exhaustion> {
        match self {
            PageError::Exhausted { short, .. } => Some(*short),
            _ => None,
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            PageError::BadRequest(_) => 400,
            PageError::Forbidden(_) => 403,
            PageError::NotFound(_) => 404,
            PageError::TooLarge(_) => 413,
            PageError::Unavailable(_) => 503,
            PageError::Internal { .. } => 500,
            PageError::Exhausted { .. } => 503,
        }
    }

    /// The message shown to the client.
    pub fn message(&self) -> &str {
        match self {
            PageError::BadRequest(m)
            | PageError::Forbidden(m)
            | PageError::NotFound(m)
            | PageError::TooLarge(m)
            | PageError::Unavailable(m) => m,
            PageError::Internal { .. } => INTERNAL_MESSAGE,
            PageError::Exhausted { short, .. } => short.message(),
        }
    }

    fn title(&self) -> &'static str {
        match self {
            PageError::BadRequest(_) => "Bad request",
            PageError::Forbidden(_) => "Forbidden",
            PageError::NotFound(_) => "Not found",
            PageError::TooLarge(_) => "Request too large",
            PageError::Unavailable(_) | PageError::Exhausted { .. } => "Service unavailable",
            PageError::Internal { .. } => "Internal server error",
        }
    }
}

/// A resource the server ran out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhaustion {
    /// Open files (`EMFILE`, `ENFILE`).
    Files,
    /// Disk space for temporary files (`ENOSPC`, `EDQUOT`, `EFBIG`).
    Disk,
    /// Memory (`ENOMEM`).
    Memory,
}

impl Exhaustion {
    /// The seconds a client is asked to wait before retrying.
    pub const RETRY_AFTER: u64 = 5;

    /// What a client is told.
    pub fn message(self) -> &'static str {
        match self {
            Exhaustion::Files => {
                "The server has too many open files just now; please retry shortly. \
                 The failure has been logged."
            }
            Exhaustion::Disk => {
                "The server is out of space for temporary files; please retry later. \
                 The failure has been logged."
            }
            Exhaustion::Memory => {
                "The server is short of memory just now; please retry shortly. \
                 The failure has been logged."
            }
        }
    }

    fn of_code(code: i32) -> Option<Exhaustion> {
        match code {
            libc::EMFILE | libc::ENFILE => Some(Exhaustion::Files),
            libc::ENOSPC | libc::EDQUOT | libc::EFBIG => Some(Exhaustion::Disk),
            libc::ENOMEM => Some(Exhaustion::Memory),
            _ => None,
        }
    }

    /// The exhaustion an error message names by its OS error code (`… (os error 24)`), for
    /// errors that keep only the text of the `io::Error` under them.
    pub fn in_text(text: &str) -> Option<Exhaustion> {
        text.match_indices("(os error ").find_map(|(at, marker)| {
            let rest = &text[at + marker.len()..];
            let code = rest.split(')').next()?.parse().ok()?;
            Exhaustion::of_code(code)
        })
    }
}

/// The exhaustion behind `err` or any of its sources: an `io::Error` with one of the codes
/// of [`Exhaustion`], found by type or by its message.
pub fn exhaustion(err: &(dyn std::error::Error + 'static)) -> Option<Exhaustion> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(short) = io.raw_os_error().and_then(Exhaustion::of_code)
        {
            return Some(short);
        }
        if let Some(short) = Exhaustion::in_text(&e.to_string()) {
            return Some(short);
        }
        next = e.source();
    }
    None
}

impl From<RepoError> for PageError {
    fn from(e: RepoError) -> Self {
        PageError::internal("opening the repository", e)
    }
}

impl From<GitError> for PageError {
    fn from(e: GitError) -> Self {
        match e {
            GitError::NotFound(m) => PageError::NotFound(m),
            GitError::BadRequest(m) => PageError::BadRequest(m),
            e @ GitError::Internal { .. } => PageError::internal("reading the repository", e),
        }
    }
}

impl From<askama::Error> for PageError {
    fn from(e: askama::Error) -> Self {
        PageError::internal("rendering a template", e)
    }
}

/// The error and each of its sources, as one log line (a source that only repeats the
/// message before it is left out).
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut last = text.clone();
    let mut source = err.source();
    while let Some(e) = source {
        let message = e.to_string();
        if message != last {
            text.push_str(": ");
            text.push_str(&message);
        }
        last = message;
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_log_their_causes_and_show_none() {
        let io = std::io::Error::other("disk on fire");
        let err = PageError::internal("reading the repository", GitError::internal(io));
        assert_eq!(chain(&err), "reading the repository: disk on fire");
        assert_eq!(err.status(), 500);
        assert!(!err.message().contains("disk"));
    }

    #[test]
    fn exhausted_resources_are_503s_whatever_wraps_them() {
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let err = PageError::internal("writing a snapshot", full);
        assert_eq!(err.exhaustion(), Some(Exhaustion::Disk));
        assert_eq!(err.status(), 503);
        assert!(err.message().contains("retry"));
        // Wrapped twice, and only as text.
        let files = std::io::Error::from_raw_os_error(libc::EMFILE);
        let err = PageError::internal("reading the repository", GitError::internal(files));
        assert_eq!(err.exhaustion(), Some(Exhaustion::Files));
        let text = format!("opening pack: {}", std::io::Error::from_raw_os_error(27));
        let err = PageError::internal("x", GitError::internal_msg(text));
        assert_eq!(err.exhaustion(), Some(Exhaustion::Disk));
        let other = std::io::Error::from_raw_os_error(libc::EACCES);
        let err = PageError::internal("reading the repository", GitError::internal(other));
        assert_eq!((err.exhaustion(), err.status()), (None, 500));
        assert_eq!(
            Exhaustion::in_text("(os error 12)"),
            Some(Exhaustion::Memory)
        );
        assert_eq!(Exhaustion::in_text("(os error 2)"), None);
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorBody<'a> {
    message: &'a str,
}

/// Renders an error page with the site frame; internal errors are logged with their cause.
pub fn page(site: &Site, req: &PageRequest, err: &PageError) -> Response {
    if let PageError::Internal { .. } | PageError::Exhausted { .. } = err {
        tracing::error!(target: "cgitd::request", url = %req.target, "{}", chain(err));
    }
    let mut frame = Frame::site(site, req, None);
    frame.title = format!("{} - {}", err.title(), site.config.globals.root_title);
    let body = ErrorBody {
        message: err.message(),
    };
    let mut response = match frame::wrap(site, &frame, &body) {
        Ok(html) => Response::html(html),
        Err(e) => {
            tracing::error!(url = %req.target, "error page: {}", chain(&e));
            Response::text(format!("{}\n", err.message()))
        }
    };
    response.status = err.status();
    match err {
        PageError::Exhausted { .. } => {
            let wait = Exhaustion::RETRY_AFTER.to_string();
            response.headers.push(("Retry-After", wait));
        }
        PageError::Unavailable(_) => response.headers.push(("Retry-After", "1".into())),
        _ => {}
    }
    response
}
