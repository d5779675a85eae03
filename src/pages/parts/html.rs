//! HTML escaping as cgit writes it (`&amp; &lt; &gt; &#x27; &quot;`), used by every template.

use std::fmt::{self, Write};

/// The templates' escaper (configured in askama.toml).
#[derive(Clone, Copy, Debug, Default)]
pub struct CgitHtml;

impl askama::filters::Escaper for CgitHtml {
    fn write_escaped_str<W: Write>(&self, mut dest: W, string: &str) -> fmt::Result {
        let mut last = 0;
        for (i, b) in string.bytes().enumerate() {
            let entity = match b {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'\'' => "&#x27;",
                b'"' => "&quot;",
                _ => continue,
            };
            dest.write_str(&string[last..i])?;
            dest.write_str(entity)?;
            last = i + 1;
        }
        dest.write_str(&string[last..])
    }
}

/// Escapes text for HTML outside templates.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    escape_into(&mut out, text);
    out
}

/// Appends `text`, escaped for HTML, to `out`.
pub fn escape_into(out: &mut String, text: &str) {
    let _ = askama::filters::Escaper::write_escaped_str(&CgitHtml, out, text);
}

/// HTML with its tags removed (entities stay as they are): what tests compare rendered rows by.
#[cfg(test)]
pub fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}
