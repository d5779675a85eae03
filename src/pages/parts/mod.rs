//! The shared parts of pages: the frame around every page, links, HTML escaping, dates and
//! ages, content types, HTTP validators, the diff body, diff
//! options, readme rendering, syntax highlighting, where text passes through filters, and pieces several pages show.

pub mod diff_body;
pub mod diffargs;
pub mod filter;
pub mod format;
pub mod frame;
pub mod highlight;
pub mod html;
pub mod links;
pub mod mime;
pub mod readme;
pub mod shared;
pub mod validators;
