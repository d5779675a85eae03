//! Link generation as cgit does it: path-style URLs below the virtual root, cgit's escaping of
//! paths and query arguments, `h` omitted when it is the default branch.

use std::fmt::Write;

/// Bytes cgit escapes in both paths and query arguments, as a table (this is asked for
/// every byte of every link).
const ALWAYS_ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b <= 0x20 || b >= 0x7f;
        b += 1;
    }
    let special = b"\"#%'<=>?\\^`{|}";
    let mut i = 0;
    while i < special.len() {
        table[special[i] as usize] = true;
        i += 1;
    }
    table
};

/// Bytes cgit escapes in both paths and query arguments.
fn always_escaped(b: u8) -> bool {
    ALWAYS_ESCAPED[usize::from(b)]
}

/// Appends `bytes` to `out` with every byte `escaped` says so written as `%xx` (and, for
/// arguments, space as `+`); bytes that need nothing (ids, most paths) are copied in one go.
fn escape_into(out: &mut String, bytes: &[u8], escaped: impl Fn(u8) -> bool, space_as_plus: bool) {
    let first = bytes
        .iter()
        .position(|&b| escaped(b))
        .unwrap_or(bytes.len());
    // Only ASCII below 0x7f is left unescaped, so this is UTF-8.
    match std::str::from_utf8(&bytes[..first]) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(&bytes[..first])),
    }
    for &b in &bytes[first..] {
        if space_as_plus && b == b' ' {
            out.push('+');
        } else if escaped(b) {
            let _ = write!(out, "%{b:02x}");
        } else {
            out.push(b as char);
        }
    }
}

fn arg_escaped(b: u8) -> bool {
    always_escaped(b) || b == b'+' || b == b'&'
}

/// cgit's URL-path escaper: `+` and `&` stay as they are.
pub fn escape_path(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    escape_into(&mut out, bytes, always_escaped, false);
    out
}

/// cgit's URL-argument escaper: space becomes `+`; `+` and `&` are escaped.
pub fn escape_arg(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    escape_into(&mut out, bytes, arg_escaped, true);
    out
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
        let path = path.unwrap_or_default();
        let args_len: usize = args.iter().map(|(n, v)| n.len() + v.len() + 2).sum();
        // one allocation for the usual link (no byte that needs escaping)
        let mut url = String::with_capacity(
            self.vroot.len()
                + self.repo_url.len()
                + page.len()
                + path.len()
                + head.map_or(0, str::len)
                + args_len
                + 8,
        );
        self.push_base(&mut url);
        url.push_str(page);
        url.push('/');
        escape_into(&mut url, path, always_escaped, false);
        self.push_query(&mut url, head, args);
        url
    }

    /// `<vroot><repo>/`, what every page link starts with.
    pub fn base(&self) -> String {
        let mut base = String::new();
        self.push_base(&mut base);
        base
    }

    /// The `?h=..&args` a [`page`](Self::page) link ends with (empty without arguments).
    pub fn query(&self, head: Option<&str>, args: &[(&str, &str)]) -> String {
        let mut query = String::new();
        self.push_query(&mut query, head, args);
        query
    }

    fn push_base(&self, url: &mut String) {
        url.push_str(self.vroot);
        escape_into(url, self.repo_url.as_bytes(), always_escaped, false);
        url.push('/');
    }

    fn push_query(&self, url: &mut String, head: Option<&str>, args: &[(&str, &str)]) {
        let head = head.filter(|h| *h != self.defbranch);
        let all = head
            .map(|h| ("h", h))
            .into_iter()
            .chain(args.iter().copied());
        for (i, (name, value)) in all.enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(name);
            url.push('=');
            escape_into(url, value.as_bytes(), arg_escaped, true);
        }
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
    fn the_table_escapes_controls_non_ascii_and_cgits_specials() {
        let specials = b"\"#%'<=>?\\^`{|}";
        for b in 0..=255u8 {
            let want = b <= 0x20 || b >= 0x7f || specials.contains(&b);
            assert_eq!(always_escaped(b), want, "{b:#x}");
        }
        assert!(!always_escaped(b'a') && !always_escaped(b'/') && always_escaped(b'"'));
    }

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
