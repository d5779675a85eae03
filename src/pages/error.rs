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
}

/// What a client is told of an internal failure.
const INTERNAL_MESSAGE: &str = "The server could not show this page; the failure has been logged.";

impl PageError {
    pub fn internal(context: &'static str, source: impl Into<Cause>) -> PageError {
        PageError::Internal {
            context,
            source: source.into(),
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
        }
    }

    fn title(&self) -> &'static str {
        match self {
            PageError::BadRequest(_) => "Bad request",
            PageError::Forbidden(_) => "Forbidden",
            PageError::NotFound(_) => "Not found",
            PageError::TooLarge(_) => "Request too large",
            PageError::Unavailable(_) => "Service unavailable",
            PageError::Internal { .. } => "Internal server error",
        }
    }
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
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorBody<'a> {
    message: &'a str,
}

/// Renders an error page with the site frame; internal errors are logged with their cause.
pub fn page(site: &Site, req: &PageRequest, err: &PageError) -> Response {
    if let PageError::Internal { .. } = err {
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
    if let PageError::Unavailable(_) = err {
        response.headers.push(("Retry-After", "1".into()));
    }
    response
}
