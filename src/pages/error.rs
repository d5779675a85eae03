//! Error pages: cgit's statuses and wording, inside the normal page frame.

use super::frame::{self, Frame};
use super::{PageRequest, Response, Site};
use crate::git::GitError;
use crate::repos::RepoError;
use askama::Template;

/// Why a page could not be shown.
#[derive(Debug)]
pub enum PageError {
    BadRequest(String),
    Forbidden(String),
    NotFound(String),
    Unavailable(String),
    Internal(String),
}

impl From<RepoError> for PageError {
    fn from(e: RepoError) -> Self {
        PageError::Internal(e.0)
    }
}

impl From<GitError> for PageError {
    fn from(e: GitError) -> Self {
        match e {
            GitError::NotFound(m) => PageError::NotFound(m),
            GitError::BadRequest(m) => PageError::BadRequest(m),
            GitError::Internal(m) => PageError::Internal(m),
        }
    }
}

impl PageError {
    pub fn status(&self) -> u16 {
        match self {
            PageError::BadRequest(_) => 400,
            PageError::Forbidden(_) => 403,
            PageError::NotFound(_) => 404,
            PageError::Unavailable(_) => 503,
            PageError::Internal(_) => 500,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            PageError::BadRequest(m)
            | PageError::Forbidden(m)
            | PageError::NotFound(m)
            | PageError::Unavailable(m)
            | PageError::Internal(m) => m,
        }
    }

    fn title(&self) -> &'static str {
        match self {
            PageError::BadRequest(_) => "Bad request",
            PageError::Forbidden(_) => "Forbidden",
            PageError::NotFound(_) => "Not found",
            PageError::Unavailable(_) => "Service unavailable",
            PageError::Internal(_) => "Internal server error",
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorBody<'a> {
    message: &'a str,
}

/// Renders an error page with the site frame.
pub fn page(site: &Site, req: &PageRequest, err: &PageError) -> Response {
    let mut frame = Frame::site(site, req, None);
    frame.title = format!("{} - {}", err.title(), site.config.globals.root_title);
    let body = ErrorBody {
        message: err.message(),
    };
    let mut response = Response::html(frame::wrap(site, &frame, &body));
    response.status = err.status();
    if let PageError::Unavailable(_) = err {
        response.headers.push(("Retry-After", "1".into()));
    }
    response
}
