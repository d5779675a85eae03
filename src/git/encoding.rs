//! Commit text in the encoding its `encoding` header declares, turned into UTF-8 as git's log
//! output and cgit's pages show it.

use std::borrow::Cow;

/// `text` re-encoded from `encoding` to UTF-8. Without a header (or with UTF-8, or a name no
/// decoder knows) the bytes are returned as stored, as git does.
pub fn reencode<'a>(text: &'a [u8], encoding: Option<&[u8]>) -> Cow<'a, [u8]> {
    let Some(label) = encoding.map(|e| e.trim_ascii()) else {
        return Cow::Borrowed(text);
    };
    if is_latin1(label) {
        // iconv's ISO-8859-1 maps every byte to the code point of the same value (the web's
        // "latin1" label means windows-1252 instead).
        let decoded: String = text.iter().map(|&b| char::from(b)).collect();
        return Cow::Owned(decoded.into_bytes());
    }
    match encoding_rs::Encoding::for_label_no_replacement(label) {
        Some(enc) if enc != encoding_rs::UTF_8 => {
            let decoded = enc.decode_without_bom_handling(text).0;
            Cow::Owned(decoded.into_owned().into_bytes())
        }
        _ => Cow::Borrowed(text),
    }
}

/// `text` as UTF-8 for display: re-encoded, then any invalid bytes replaced.
pub fn decode(text: &[u8], encoding: Option<&[u8]>) -> String {
    match reencode(text, encoding) {
        Cow::Borrowed(raw) => String::from_utf8_lossy(raw).into_owned(),
        Cow::Owned(utf8) => String::from_utf8(utf8).expect("decoders produce UTF-8"),
    }
}

fn is_latin1(label: &[u8]) -> bool {
    [
        &b"ISO-8859-1"[..],
        b"ISO8859-1",
        b"ISO_8859-1",
        b"latin1",
        b"latin-1",
        b"l1",
    ]
    .iter()
    .any(|name| label.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_encodings_become_utf8() {
        assert_eq!(decode(b"caf\xe9", Some(b"ISO-8859-1")), "café");
        assert_eq!(decode(b"\x80", Some(b"latin1")), "\u{80}");
        assert_eq!(decode(b"\x82\xa0", Some(b"Shift_JIS")), "あ");
        assert_eq!(decode(b"\xf0\xd2\xc9", Some(b"KOI8-R")), "При");
        assert_eq!(decode("naïve".as_bytes(), Some(b"UTF-8")), "naïve");
    }

    #[test]
    fn undeclared_or_unknown_stay_as_stored() {
        assert_eq!(reencode(b"caf\xe9", None), Cow::Borrowed(&b"caf\xe9"[..]));
        assert_eq!(
            reencode(b"caf\xe9", Some(b"x-unknown")),
            Cow::Borrowed(&b"caf\xe9"[..])
        );
        assert_eq!(decode(b"caf\xe9", None), "caf\u{fffd}");
    }
}
