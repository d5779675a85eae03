//! Path quoting as git prints paths in diffs (`core.quotePath` at its default).

/// The escape git writes for `b` inside a quoted path, or `None` when `b` is written as is.
fn escape(b: u8) -> Option<&'static [u8]> {
    Some(match b {
        0x07 => b"\\a",
        0x08 => b"\\b",
        b'\t' => b"\\t",
        b'\n' => b"\\n",
        0x0b => b"\\v",
        0x0c => b"\\f",
        b'\r' => b"\\r",
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        _ => return None,
    })
}

fn must_quote(b: u8) -> bool {
    !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\'
}

/// Whether git would quote `path`.
pub fn needs_quoting(path: &[u8]) -> bool {
    path.iter().any(|&b| must_quote(b))
}

fn push_escaped(out: &mut Vec<u8>, path: &[u8]) {
    for &b in path {
        if let Some(e) = escape(b) {
            out.extend_from_slice(e);
        } else if must_quote(b) {
            out.extend_from_slice(format!("\\{b:03o}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

/// `path`, in double quotes with C-style escapes when it has unusual bytes.
pub fn quoted(path: &[u8]) -> Vec<u8> {
    quoted_with_prefix(b"", path)
}

/// `prefix` + `path` (e.g. `a/` + name), quoted as one string when the path needs it.
pub fn quoted_with_prefix(prefix: &[u8], path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + path.len() + 2);
    if needs_quoting(path) {
        out.push(b'"');
        out.extend_from_slice(prefix);
        push_escaped(&mut out, path);
        out.push(b'"');
    } else {
        out.extend_from_slice(prefix);
        out.extend_from_slice(path);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_git() {
        assert_eq!(quoted(b"plain name"), b"plain name");
        assert_eq!(
            quoted_with_prefix(b"a/", "é".as_bytes()),
            br#""a/\303\251""#
        );
        assert_eq!(quoted(b"tab\there\"q\\"), br#""tab\there\"q\\""#);
        assert_eq!(quoted(b"del\x7f\x01"), br#""del\177\001""#);
    }
}
