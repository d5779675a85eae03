//! Where pages pass text through the configured filters (commit, email, owner, source): what
//! they give a filter and where its output goes, as cgit does it.

use super::highlight;
use super::html::escape;
use crate::filter::{apply, config_env};
use crate::git::commit::Person;
use crate::pages::RepoCtx;
use gix::ObjectId;

/// The `CGIT_REPO_*` variables cgit gives filters.
pub fn repo_env(ctx: &RepoCtx<'_>) -> Vec<(&'static str, String)> {
    config_env(&ctx.state.config, &ctx.defbranch)
}

/// `text` as HTML: escaped, then through `filter` when one is configured — cgit gives its
/// commit, email and owner filters the escaped text and includes their output as it is. A
/// filter that fails leaves the escaped text (and a warning). `env` is only built for a filter.
pub fn filtered_text(
    filter: Option<&str>,
    args: &[&str],
    env: impl FnOnce() -> Vec<(&'static str, String)>,
    text: &str,
) -> String {
    let escaped = escape(text);
    let Some(spec) = filter else {
        return escaped;
    };
    match apply(spec, args, &env(), escaped.as_bytes()) {
        Ok(out) => String::from_utf8_lossy(&out.out).into_owned(),
        Err(e) => {
            tracing::warn!("{e}");
            escaped
        }
    }
}

/// A person's `text` (name, perhaps with email) as HTML, through the email-filter when one is
/// configured: its arguments are the email in angle brackets and the page, as cgit gives them.
pub fn person_html(ctx: &RepoCtx<'_>, person: &Person, text: &str, page: &str) -> String {
    let Some(filter) = ctx.state.config.opts.email_filter.as_deref() else {
        return escape(text);
    };
    let email = format!("<{}>", person.email);
    filtered_text(Some(filter), &[&email, page], || repo_env(ctx), text)
}

/// A person as name and email (only the name with `noplainemail`), as HTML through the
/// email-filter, as the commit and tag pages show them.
pub fn name_and_email_html(ctx: &RepoCtx<'_>, person: &Person, page: &str) -> String {
    let text = if ctx.site.config.globals.noplainemail {
        person.name.clone()
    } else {
        format!("{} <{}>", person.name, person.email)
    };
    person_html(ctx, person, &text, page)
}

/// The text of blob `id` (all or the beginning of it) as HTML: through the source-filter when
/// one is configured (it gets the raw text and the file's name, as cgit runs it, e.g. for
/// syntax highlighting), else highlighted in-process (unless `enable-highlight=0`), else
/// escaped.
pub fn source_html(ctx: &RepoCtx<'_>, path: &[u8], id: ObjectId, text: &[u8]) -> String {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
    let name = String::from_utf8_lossy(name);
    let raw = text;
    let text = String::from_utf8_lossy(raw);
    match ctx.state.config.opts.source_filter.as_deref() {
        Some(spec) => match apply(spec, &[&name], &repo_env(ctx), raw) {
            Ok(out) => return String::from_utf8_lossy(&out.out).into_owned(),
            Err(e) => tracing::warn!("source-filter: {e}"),
        },
        None if ctx.state.config.opts.no_highlight => {}
        None => {
            if let Some(html) = highlight::cached_html(ctx, id, &name, &text) {
                return html.to_string();
            }
        }
    }
    escape(&text)
}
