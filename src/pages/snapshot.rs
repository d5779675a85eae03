//! snapshot: `/<repo>/snapshot/<name>.<suffix>` — an archive of a commit in any format the
//! repository enables, the revision guessed from the file name as cgit does, streamed; and
//! `<name>.<suffix>.asc`, its signature from `refs/notes/signatures/<suffix>`.

use super::parts::{shared, validators};
use super::{Body, PageError, RepoCtx, Response};
use crate::config::SNAPSHOT_FORMATS;
use crate::git;
use crate::git::archive::{self, Archive, Format};
use gix::bstr::ByteSlice;
use std::sync::Arc;

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let requested = ctx
        .req
        .path
        .as_ref()
        .ok_or_else(|| PageError::BadRequest("No snapshot name specified".into()))?
        .to_str_lossy()
        .into_owned();
    if let Some(archive) = requested.strip_suffix(".asc") {
        return signature(ctx, archive, &requested);
    }
    let (stem, suffix, mime) = split_name(ctx, &requested, true)?;
    let format = Format::from_suffix(suffix).ok_or_else(|| {
        PageError::BadRequest(format!("Unsupported snapshot format: {requested}"))
    })?;
    let (revision, root) = revision_and_root(ctx, stem)?;
    let id = git::rev::resolve(ctx.repo, &revision)?;
    let commit = git::rev::peel_named(ctx.repo, &revision, id)?
        .ok_or_else(|| PageError::BadRequest(format!("Not a commit reference: {revision}")))?;
    let etag = format!("\"{commit}\"");
    if validators::matches(ctx.req.if_none_match.as_deref(), &etag) {
        return Ok(Response::not_modified(etag));
    }
    let info = git::commit::read_commit(ctx.repo, commit)?;
    let root = safe_dir_name(&root);
    let archive = Archive {
        commit,
        tree: info.tree,
        mtime: info.committer.time.seconds,
        prefix: root.clone(),
    };
    let filename = format!("{root}.{suffix}");
    let (file, len) = write_archive(ctx.repo, &archive, format)?;
    Ok(Response {
        status: 200,
        content_type: mime.to_string(),
        headers: vec![
            ("Content-Disposition", disposition(&filename)),
            ("ETag", etag),
        ],
        body: Body::File {
            file: Arc::new(file),
            offset: 0,
            len,
        },
    })
}

/// Writes the archive to an unnamed temporary file, so that sending it needs no git work.
fn write_archive(
    repo: &crate::git::Repo,
    archive: &Archive,
    format: Format,
) -> Result<(std::fs::File, u64), PageError> {
    let cause = |e| PageError::internal("writing a snapshot", e);
    let mut out = std::io::BufWriter::new(tempfile::tempfile().map_err(cause)?);
    archive::write(repo, archive, format, &mut out).map_err(cause)?;
    let file = out.into_inner().map_err(|e| cause(e.into_error()))?;
    let len = file.metadata().map_err(cause)?.len();
    Ok((file, len))
}

/// The signature of the archive `archive` (any format, enabled or not, as in cgit), served as
/// `filename`.
fn signature(ctx: &RepoCtx<'_>, archive: &str, filename: &str) -> Result<Response, PageError> {
    let (stem, suffix, _) = split_name(ctx, archive, false)?;
    let (revision, _) = revision_and_root(ctx, stem)?;
    // the note is on the object the revision names (a tag, not its commit)
    let note = git::rev::resolve(ctx.repo, &revision)
        .ok()
        .and_then(|object| shared::snapshot_signature(ctx, object, suffix))
        .ok_or_else(|| PageError::NotFound(format!("No signature for {archive}")))?;
    let etag = format!("\"{note}\"");
    if validators::matches(ctx.req.if_none_match.as_deref(), &etag) {
        return Ok(Response::not_modified(etag));
    }
    let blob = ctx
        .repo
        .find_object(note)
        .map_err(|_| PageError::NotFound("Not found".into()))?;
    Ok(Response {
        status: 200,
        content_type: "application/pgp-signature".into(),
        headers: vec![
            ("Content-Disposition", disposition(filename)),
            ("ETag", etag),
            ("X-Content-Type-Options", "nosniff".into()),
            ("Content-Security-Policy", "default-src 'none'".into()),
        ],
        body: blob.detach().data.into(),
    })
}

/// The revision to archive (`id`, else `h`, else guessed from the file name) and the
/// archive's root directory.
fn revision_and_root(ctx: &RepoCtx<'_>, stem: &str) -> Result<(String, String), PageError> {
    let q = &ctx.req.query;
    Ok(match q.id.as_ref().or(q.h.as_ref()) {
        Some(rev) => (rev.clone(), shared::snapshot_prefix(ctx)),
        None => (guess_revision(ctx, stem)?, stem.to_string()),
    })
}

/// Splits `name` into stem, suffix and content type by the known formats (only those the
/// repository enables when `enabled_only`).
fn split_name<'n>(
    ctx: &RepoCtx<'_>,
    name: &'n str,
    enabled_only: bool,
) -> Result<(&'n str, &'static str, &'static str), PageError> {
    let enabled = ctx.state.config.opts.snapshots;
    SNAPSHOT_FORMATS
        .iter()
        .enumerate()
        .filter(|(bit, _)| !enabled_only || enabled & (1 << bit) != 0)
        .find_map(|(_, (suffix, mime))| {
            let stem = name.strip_suffix(suffix)?.strip_suffix('.')?;
            Some((stem, *suffix, *mime))
        })
        .ok_or_else(|| PageError::BadRequest(format!("Unsupported snapshot format: {name}")))
}

/// cgit's guess: the stem as a revision; without the snapshot prefix and the `-`/`_` after
/// it; then with `v`, then `V` in front.
fn guess_revision(ctx: &RepoCtx<'_>, stem: &str) -> Result<String, PageError> {
    let prefix = shared::snapshot_prefix(ctx);
    let version = match stem.strip_prefix(prefix.as_str()) {
        Some(rest) if !prefix.is_empty() => rest.trim_start_matches(['-', '_']),
        _ => stem,
    };
    let candidates = [
        stem.to_string(),
        version.to_string(),
        format!("v{version}"),
        format!("V{version}"),
    ];
    candidates
        .into_iter()
        .find(|rev| git::rev::resolve(ctx.repo, rev).is_ok())
        .ok_or_else(|| PageError::NotFound("Not found".into()))
}

/// The archive's root directory: one path component whatever the URL said — no `/`, `\`,
/// control characters, and never `.` or `..`.
fn safe_dir_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    match cleaned.as_str() {
        "" | "." | ".." => "_".into(),
        _ => cleaned,
    }
}

/// `inline; filename="…"` with a name a header can carry (ASCII, quotes escaped).
fn disposition(filename: &str) -> String {
    let mut quoted = String::with_capacity(filename.len());
    for c in filename.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            c if c.is_ascii_graphic() || c == ' ' => quoted.push(c),
            _ => quoted.push('_'),
        }
    }
    format!("inline; filename=\"{quoted}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_directory_is_one_safe_component() {
        assert_eq!(safe_dir_name("repo-1.0"), "repo-1.0");
        assert_eq!(safe_dir_name("../../etc"), ".._.._etc");
        assert_eq!(safe_dir_name("/abs"), "_abs");
        assert_eq!(safe_dir_name("a\\b\n\u{7f}"), "a_b__");
        assert_eq!(safe_dir_name(".."), "_");
        assert_eq!(safe_dir_name(""), "_");
    }

    #[test]
    fn disposition_quotes_and_stays_ascii() {
        assert_eq!(
            disposition("a\"b\\c-é.tar"),
            "inline; filename=\"a\\\"b\\\\c-_.tar\""
        );
    }
}
