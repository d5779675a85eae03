//! The dumb-HTTP clone files (`enable-http-clone`): `info/refs` from the ref snapshot, `HEAD`,
//! `objects/info/packs` and the files below `objects/`, which are streamed and opened without
//! following symbolic links.

use super::{Body, PageError, RepoCtx, Response};
use crate::confined_files::{self as files, FileError};
use std::sync::Arc;

/// `/<repo>/info/refs`: every ref but HEAD, with `^{}` lines for annotated tags.
pub fn info(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    enabled(ctx)?;
    if ctx.req.path.as_deref().map(|p| p.as_slice()) != Some(b"refs") {
        return Err(PageError::BadRequest("Bad request".into()));
    }
    let mut text = String::new();
    for r in ctx.refs.all.iter().filter(|r| r.name.starts_with("refs/")) {
        text.push_str(&format!("{}\t{}\n", r.id, r.name));
        if let Some(peeled) = r.peeled {
            text.push_str(&format!("{peeled}\t{}^{{}}\n", r.name));
        }
    }
    Ok(text_response(text, "info/refs"))
}

/// `/<repo>/HEAD`: the HEAD file as it is.
pub fn head(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    enabled(ctx)?;
    send_file(ctx, &["HEAD"])
}

/// `/<repo>/objects/<path>`: the pack list, or any file below `objects/`.
pub fn objects(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    enabled(ctx)?;
    let path = ctx
        .req
        .path
        .as_deref()
        .ok_or_else(|| PageError::BadRequest("Bad request".into()))?;
    if path.as_slice() == b"info/packs" {
        return pack_list(ctx);
    }
    let parts = files::checked_components(path).map_err(file_error)?;
    let rel: Vec<&str> = std::iter::once("objects").chain(parts).collect();
    send_file(ctx, &rel)
}

/// cgit answers every clone URL with 404 when `enable-http-clone=0`.
fn enabled(ctx: &RepoCtx<'_>) -> Result<(), PageError> {
    if ctx.site.config.globals.enable_http_clone {
        Ok(())
    } else {
        Err(PageError::NotFound("Invalid request".into()))
    }
}

/// `P pack-<x>.pack` for every pack that has its index.
fn pack_list(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let names = match files::list_names(ctx.state.git_dir(), &["objects", "pack"]) {
        Err(FileError::NotFound) => Vec::new(),
        other => other.map_err(file_error)?,
    };
    let mut text = String::new();
    for name in &names {
        let Some(stem) = name
            .strip_prefix("pack-")
            .and_then(|s| s.strip_suffix(".pack"))
        else {
            continue;
        };
        if names.contains(&format!("pack-{stem}.idx")) {
            text.push_str(&format!("P {name}\n"));
        }
    }
    text.push('\n');
    Ok(text_response(text, "objects/info/packs"))
}

fn text_response(text: String, filename: &str) -> Response {
    Response {
        status: 200,
        content_type: "text/plain; charset=UTF-8".into(),
        headers: vec![("Content-Disposition", disposition(filename))],
        body: text.into_bytes().into(),
    }
}

/// Sends the file `rel` of the git directory.
fn send_file(ctx: &RepoCtx<'_>, rel: &[&str]) -> Result<Response, PageError> {
    let file = files::open_file(ctx.state.git_dir(), rel).map_err(file_error)?;
    let len = file
        .metadata()
        .map_err(|e| PageError::internal("reading a git file's size", e))?
        .len();
    Ok(Response {
        status: 200,
        content_type: "application/octet-stream".into(),
        headers: vec![
            ("Content-Disposition", disposition(&rel.join("/"))),
            ("Content-Length", len.to_string()),
        ],
        body: Body::File {
            file: Arc::new(file),
            offset: 0,
            len,
        },
    })
}

/// Names here are from [`files::checked_components`] or fixed, so they need no quoting.
fn disposition(filename: &str) -> String {
    format!("inline; filename=\"{filename}\"")
}

fn file_error(e: FileError) -> PageError {
    match e {
        FileError::BadPath => PageError::BadRequest("Bad request".into()),
        FileError::NotFound => PageError::NotFound("Not found".into()),
        FileError::Forbidden => PageError::Forbidden("Forbidden".into()),
        FileError::Internal(m) => PageError::internal("opening a git file", m),
    }
}
