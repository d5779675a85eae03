//! Revision resolution: URL strings to object ids, only ever as revisions.

use super::Repo;
use super::error::GitError;
use gix::ObjectId;
use gix::object::Kind;

/// Resolves a revision expression. Strings that look like options are refused, and reflog or
/// upstream forms that a server cannot answer are not found.
pub fn resolve(repo: &gix::Repository, spec: &str) -> Result<ObjectId, GitError> {
    if spec.starts_with('-') || spec.is_empty() || spec.contains('\0') {
        return Err(GitError::BadRequest(format!("Invalid revision: {spec}")));
    }
    // A full id needs no ref lookups (rev-parse would first try six ref names).
    if let Ok(id) = ObjectId::from_hex(spec.as_bytes())
        && repo.has_object(id)
    {
        return Ok(id);
    }
    if let Ok(id) = repo.rev_parse_single(spec) {
        return Ok(id.detach());
    }
    for candidate in [format!("refs/heads/{spec}"), format!("refs/tags/{spec}")] {
        if let Ok(id) = repo.rev_parse_single(candidate.as_str()) {
            return Ok(id.detach());
        }
    }
    Err(GitError::NotFound(format!("Invalid revision: {spec}")))
}

/// Resolves a revision and peels it to a commit.
pub fn resolve_commit(repo: &Repo, spec: &str) -> Result<ObjectId, GitError> {
    let id = resolve(repo, spec)?;
    peel_named(repo, spec, id)?
        .ok_or_else(|| GitError::NotFound(format!("Invalid commit reference: {spec}")))
}

/// Peels `id`, what the revision `spec` resolved to, to a commit; `None` when it names none.
/// An object that is missing though `spec` is not its id was named by the repository itself
/// (a ref, a tag, a parent): the repository is broken, which is no fault of the client's.
pub fn peel_named(repo: &Repo, spec: &str, id: ObjectId) -> Result<Option<ObjectId>, GitError> {
    let commit = peel_to_commit(repo, id)?;
    let literal = ObjectId::from_hex(spec.as_bytes()).is_ok_and(|given| given == id);
    if commit.is_none() && !literal && !repo.has_object(&id)? {
        return Err(GitError::internal_msg(format!(
            "{spec} names {id}, which is missing"
        )));
    }
    Ok(commit)
}

/// Tags followed at most from a name to what it names (git's own bound is far higher, but
/// no repository nests tags deeper than a few).
const MAX_TAG_DEPTH: usize = 64;

/// Follows tags to the commit they name; `None` when it is not a commit or is missing. The
/// objects are read through the shared pack reader; one that cannot be read is an error, as is
/// a tag whose target is missing.
pub fn peel_to_commit(repo: &Repo, mut id: ObjectId) -> Result<Option<ObjectId>, GitError> {
    for depth in 0..MAX_TAG_DEPTH {
        let Some((kind, data)) = repo.read_object(&id)? else {
            if depth == 0 {
                return Ok(None);
            }
            return Err(GitError::internal_msg(format!(
                "a tag names {id}, which is missing"
            )));
        };
        match kind {
            Kind::Commit => return Ok(Some(id)),
            Kind::Tag => {
                id = gix::objs::TagRef::from_bytes(&data, repo.object_hash())
                    .map_err(|e| GitError::internal_in(format!("tag {id}"), e))?
                    .target()
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// The commits a `qt=range` search names: whitespace-separated revisions, `^rev` and `a..b`
/// exclude. Returns (tips, hidden). Option-like tokens are refused; `a...b` is not supported.
pub fn resolve_range(repo: &Repo, q: &str) -> Result<(Vec<ObjectId>, Vec<ObjectId>), GitError> {
    let mut tips = Vec::new();
    let mut hidden = Vec::new();
    for token in q.split_whitespace() {
        if token.starts_with('-') {
            return Err(GitError::BadRequest(format!("Invalid revision: {token}")));
        }
        if token.contains("...") {
            return Err(GitError::BadRequest(format!(
                "Symmetric ranges are not supported: {token}"
            )));
        }
        if let Some(rest) = token.strip_prefix('^') {
            hidden.push(resolve_commit(repo, rest)?);
        } else if let Some((from, to)) = token.split_once("..") {
            hidden.push(resolve_commit(repo, or_head(from))?);
            tips.push(resolve_commit(repo, or_head(to))?);
        } else {
            tips.push(resolve_commit(repo, token)?);
        }
    }
    Ok((tips, hidden))
}

/// An empty side of `a..b` means HEAD, as in git.
fn or_head(rev: &str) -> &str {
    if rev.is_empty() { "HEAD" } else { rev }
}
