//! tag: one tag from the ref snapshot (`id`, else `h`); annotated tags also show their tagger,
//! date and message, read from the tag object for this page only.

use super::parts::frame::{self, Frame};
use super::parts::shared;
use super::{PageError, RepoCtx, Response};
use crate::git::commit::Person;
use crate::repos::Tag;
use askama::Template;
use gix::bstr::ByteSlice;

#[derive(Template)]
#[template(path = "tag.html")]
struct TagView {
    name: String,
    tag_id: Option<String>,
    date: Option<String>,
    /// HTML (escaped, or the email-filter's output).
    tagger: Option<String>,
    object: (String, String),
    downloads: Vec<shared::SnapshotLink>,
    message: Option<(String, String)>,
}

pub fn render(ctx: &RepoCtx<'_>) -> Result<Response, PageError> {
    let name = ctx.req.query.id.as_deref().unwrap_or(&ctx.head);
    let tag = ctx
        .refs
        .tag(name)
        .ok_or_else(|| PageError::NotFound(format!("Bad tag reference: {name}")))?;
    let mut view = TagView {
        name: tag.name.clone(),
        tag_id: None,
        date: None,
        tagger: None,
        object: shared::object_link(ctx, &tag.target, tag.target_kind),
        downloads: if ctx.state.config.opts.snapshots != 0 {
            shared::snapshot_links(ctx, &tag.name)
        } else {
            Vec::new()
        },
        message: None,
    };
    if tag.annotated {
        annotate(ctx, tag, &mut view)?;
    }
    let frame = Frame::repo(ctx, "tag");
    Ok(Response::html(frame::wrap(ctx.site, &frame, &view)?))
}

/// Fills in what only the tag object knows: its id, tagger, date, direct target and message.
fn annotate(ctx: &RepoCtx<'_>, tag: &Tag, view: &mut TagView) -> Result<(), PageError> {
    let object = ctx
        .repo
        .find_tag(tag.id)
        .map_err(|e| PageError::internal("reading a tag", e))?;
    let decoded = object
        .decode()
        .map_err(|e| PageError::internal("decoding a tag", e))?;
    view.tag_id = Some(tag.id.to_string());
    if let Ok(Some(tagger)) = decoded.tagger() {
        let person = Person::from_signature(tagger, None);
        if person.time.seconds != 0 {
            view.date = Some(super::parts::format::iso_date(person.time));
        }
        view.tagger = Some(super::parts::filter::name_and_email_html(
            ctx, &person, "tag",
        ));
    }
    view.object = shared::object_link(ctx, &decoded.target(), decoded.target_kind);
    let message = decoded.message.to_str_lossy();
    let (subject, body) = message.split_once('\n').unwrap_or((&message, ""));
    view.message = Some((subject.to_string(), body.to_string()));
    Ok(())
}
