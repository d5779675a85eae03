//! rawdiff: the plain-text diff of two commits, byte-identical to `git diff old new [-- PATH]`
//! (`git diff-tree -p --root` for a root commit).

use super::parts::diffargs::commit_pair;
use super::{PageError, RepoCtx, Response};
use crate::git::diff::{self, Abbrev, DiffOptions, Limits};

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let pair = commit_pair(ctx)?;
    let opts = DiffOptions {
        rename_limit: ctx.site.config.globals.renamelimit,
        ..DiffOptions::default()
    };
    let path = ctx.req.path.as_ref().map(|p| p.as_slice());
    let tree = diff::diff_commits(ctx.repo, pair.old, pair.new, &opts, path, Limits::RAW)?;
    if tree.truncated {
        return Err(PageError::Unavailable(
            "The diff is too large to be shown".into(),
        ));
    }
    let mut body = Vec::with_capacity(4096);
    diff::patch::write_patch(&mut body, &tree.files, &Abbrev::new(ctx.repo), None)?;
    Ok(Response {
        status: 200,
        content_type: "text/plain; charset=UTF-8".into(),
        headers: Vec::new(),
        body: body.into(),
    })
}
