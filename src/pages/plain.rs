//! plain: a file's raw bytes at a revision with its mime type (neutered unless
//! `enable-html-serving`), or a minimal HTML listing of a directory. Both carry the object id
//! as ETag.

use super::blob::safe_headers;
use super::parts::shared;
use super::{PageError, RepoCtx, Response};
use crate::git::tree::{self as gtree, Found};
use crate::git::{self, GitError};
use askama::Template;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

#[derive(Template)]
#[template(path = "plain_dir.html")]
struct Listing {
    title: String,
    parent: Option<String>,
    entries: Vec<(String, String)>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let commit = shared::page_commit(ctx)?;
    let tree = git::commit::read_commit(ctx.repo, commit)?.tree;
    let path = ctx.path();
    let not_found = || PageError::NotFound("Not found".into());
    match gtree::find(ctx.repo, tree, path)?.ok_or_else(not_found)? {
        Found::Tree(id) => directory(ctx, id, path),
        Found::Blob { id, .. } => file(ctx, id, path),
        Found::Submodule(_) => Err(not_found()),
    }
}

fn file(ctx: &RepoCtx<'_>, id: ObjectId, path: &BStr) -> Result<Response, PageError> {
    let data = gtree::read_blob(ctx.repo, id)?.data;
    let name = path.rsplit_str("/").next().unwrap_or_default();
    let declared = super::parts::mime::for_filename(&ctx.site.config.globals, name);
    let html_serving = ctx.state.config.opts.enable_html_serving;
    let content_type =
        super::parts::mime::serve_as(declared, gtree::is_binary(&data), html_serving);
    let mut headers = if html_serving {
        Vec::new()
    } else {
        safe_headers()
    };
    headers.push(("Content-Disposition", shared::inline_disposition(name)));
    headers.push(("ETag", format!("\"{id}\"")));
    Ok(Response {
        status: 200,
        content_type,
        headers,
        body: data.into(),
    })
}

fn directory(ctx: &RepoCtx<'_>, id: ObjectId, path: &BStr) -> Result<Response, PageError> {
    let dir: Vec<u8> = gtree::components(path)
        .flat_map(|c| [c.as_bytes(), b"/"])
        .flatten()
        .copied()
        .collect();
    let link = |p: &[u8]| shared::rev_link(ctx, "plain", (!p.is_empty()).then_some(p));
    let parent = (!dir.is_empty()).then(|| {
        let without_slash = &dir[..dir.len() - 1];
        let up = without_slash
            .rfind_byte(b'/')
            .map_or(&b""[..], |i| &dir[..=i]);
        link(up)
    });
    let entries = gtree::entries(ctx.repo, id)?
        .into_iter()
        .filter(|e| !e.mode.is_commit())
        .map(|e| {
            let mut child = dir.clone();
            child.extend_from_slice(&e.name);
            if e.mode.is_tree() {
                child.push(b'/');
            }
            (link(&child), e.name.to_str_lossy().into_owned())
        })
        .collect();
    let listing = Listing {
        title: format!("/{}", dir.to_str_lossy()),
        parent,
        entries,
    };
    let body = listing.render().map_err(GitError::internal)?;
    let mut response = Response::html(body);
    response.headers.push(("ETag", format!("\"{id}\"")));
    Ok(response)
}
