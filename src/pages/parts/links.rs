//! Link generation as cgit does it: path-style URLs below the virtual root, cgit's escaping of
//! paths and query arguments, `h` omitted when it is the default branch.

use std::fmt::Write;

/// Bytes cgit escapes in both paths and query arguments.
fn always_escaped(b: u8) -> bool {
    b <= 0x20 || b >= 0x7f || b"\"#%'<=>?\\^`{|}".contains(&b)
}

/// `bytes` with every byte `escaped` says so written as `%xx` (and, for arguments, space as
/// `+`); bytes that need nothing (ids, most paths) are copied in one go.
fn escape_with(bytes: &[u8], escaped: impl Fn(u8) -> bool, space_as_plus: bool) -> String {
    let Some(first) = bytes.iter().position(|&b| escaped(b)) else {
        // Only ASCII below 0x7f is left unescaped, so this is UTF-8.
        return String::from_utf8_lossy(bytes).into_owned();
    };
    let mut out = String::with_capacity(bytes.len() + 16);
    out.push_str(&String::from_utf8_lossy(&bytes[..first]));
    for &b in &bytes[first..] {
        if space_as_plus && b == b' ' {
            out.push('+');
        } else if escaped(b) {
            let _ = write!(out, "%{b:02x}");
        } else {
            out.push(b as char);
        }
    }
    out
}

/// cgit's URL-path escaper: `+` and `&` stay as they are.
pub fn escape_path(bytes: &[u8]) -> String {
    escape_with(bytes, always_escaped, false)
}

/// cgit's URL-argument escaper: space becomes `+`; `+` and `&` are escaped.
pub fn escape_arg(bytes: &[u8]) -> String {
    escape_with(bytes, |b| always_escaped(b) || b == b'+' || b == b'&', true)
}

/// Builds links for one repository under one virtual root.
#[derive(Clone, Copy)]
pub struct RepoLinks<'a> {
    pub vroot: &'a str,
    pub repo_url: &'a str,
    pub defbranch: &'a str,
}

impl<'a> RepoLinks<'a> {
    /// The repository's summary page.
    pub fn summary(&self) -> String {
        format!("{}{}/", self.vroot, escape_path(self.repo_url.as_bytes()))
    }

    /// `<vroot><repo>/<page>/<path>?h=..&args`, with `h` dropped when it is the default branch.
    pub fn page(
        &self,
        page: &str,
        path: Option<&[u8]>,
        head: Option<&str>,
        args: &[(&str, &str)],
    ) -> String {
        let mut url = self.summary();
        url.push_str(page);
        url.push('/');
        if let Some(path) = path {
            url.push_str(&escape_path(path));
        }
        let head = head.filter(|h| *h != self.defbranch);
        let all = head
            .map(|h| ("h", h))
            .into_iter()
            .chain(args.iter().copied());
        for (i, (name, value)) in all.enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(name);
            url.push('=');
            url.push_str(&escape_arg(value.as_bytes()));
        }
        url
    }
}

/// A link with query arguments on a non-repository page (`?s=..&q=..`).
pub fn with_args(base: &str, args: &[(&str, &str)]) -> String {
    let mut url = base.to_string();
    for (i, (name, value)) in args.iter().enumerate() {
        url.push(if i == 0 { '?' } else { '&' });
        url.push_str(name);
        url.push('=');
        url.push_str(&escape_arg(value.as_bytes()));
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_cgit() {
        assert_eq!(escape_path(b"foo+bar/with space"), "foo+bar/with%20space");
        assert_eq!(escape_arg(b"1+2"), "1%2b2");
        assert_eq!(escape_arg(b"commit 1&x"), "commit+1%26x");
        assert_eq!(escape_path(&[0xc3, 0xa9, b'?']), "%c3%a9%3f");
    }

    #[test]
    fn head_is_dropped_when_default() {
        let links = RepoLinks {
            vroot: "/",
            repo_url: "foo+bar",
            defbranch: "master",
        };
        assert_eq!(
            links.page("log", None, Some("master"), &[]),
            "/foo+bar/log/"
        );
        assert_eq!(
            links.page("tree", Some(b"a b"), Some("dev"), &[("id", "abc")]),
            "/foo+bar/tree/a%20b?h=dev&id=abc"
        );
    }
}
