//! blob: a raw blob by full object id (`id`), or by `h` and path, served so that a browser
//! never runs it (nosniff, a CSP that allows nothing).

use super::parts::shared;
use super::{PageError, RepoCtx, Response};
use crate::git::tree::{self as gtree, Found};
use crate::git::{self, GitError};
use gix::ObjectId;
use gix::bstr::ByteSlice;

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let path = ctx.req.path.as_ref();
    let id = match &ctx.req.query.id {
        Some(hex) => {
            let id = full_hex(hex)?;
            if !ctx.repo.has_object(&id)? {
                return Err(PageError::NotFound(format!("Bad object name: {id}")));
            }
            id
        }
        None => {
            let commit = shared::page_commit(ctx)?;
            let tree = git::commit::read_commit(ctx.repo, commit)?.tree;
            let path = path.ok_or_else(|| PageError::NotFound("Path not found".into()))?;
            match gtree::find(ctx.repo, tree, path.as_bstr())? {
                Some(Found::Blob { id, .. }) => id,
                _ => return Err(PageError::NotFound("Path not found".into())),
            }
        }
    };
    let blob = gtree::read_blob(ctx.repo, id).map_err(|e| match e {
        GitError::NotFound(_) => PageError::NotFound(format!("Bad object name: {id}")),
        other => other.into(),
    })?;
    let binary = gtree::is_binary(&blob.data);
    let mut headers = safe_headers();
    if let Some(p) = path {
        headers.push(("Content-Disposition", shared::inline_disposition(p)));
    }
    Ok(Response {
        status: 200,
        content_type: if binary {
            "application/octet-stream".into()
        } else {
            "text/plain; charset=UTF-8".into()
        },
        headers,
        body: blob.data.into(),
    })
}

/// A full hexadecimal object id, else 400 "Bad hex value".
fn full_hex(hex: &str) -> Result<ObjectId, PageError> {
    let bad = || PageError::BadRequest(format!("Bad hex value: {hex}"));
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| bad())
}

/// Headers that stop browsers from sniffing or running served content.
pub fn safe_headers() -> Vec<(&'static str, String)> {
    vec![
        ("X-Content-Type-Options", "nosniff".into()),
        ("Content-Security-Policy", "default-src 'none'".into()),
    ]
}
