//! git's patch text (`git diff` output), byte for byte.

use super::binary::BinaryPatches;
use super::quote::{quoted, quoted_with_prefix};
use super::{Abbrev, Content, FileDiff, Hunk, LineKind, Status};
use crate::git::error::GitError;

/// Appends the patch of every file. Binary files get `binary` patches when given (as with
/// `git diff --binary`), otherwise git's `Binary files … differ` line.
pub fn write_patch(
    out: &mut Vec<u8>,
    files: &[FileDiff],
    abbrev: &Abbrev,
    binary: Option<&BinaryPatches<'_>>,
) -> Result<(), GitError> {
    for file in files {
        write_file(out, file, abbrev, binary)?;
    }
    Ok(())
}

fn write_file(
    out: &mut Vec<u8>,
    f: &FileDiff,
    abbrev: &Abbrev,
    binary: Option<&BinaryPatches<'_>>,
) -> Result<(), GitError> {
    if let Content::Replaced { old, new } = &f.content {
        let deleted = FileDiff {
            status: Status::Deleted,
            new: None,
            content: (**old).clone(),
            ..f.clone()
        };
        let added = FileDiff {
            status: Status::Added,
            old: None,
            content: (**new).clone(),
            ..f.clone()
        };
        write_file(out, &deleted, abbrev, binary)?;
        return write_file(out, &added, abbrev, binary);
    }
    let mut header = Vec::with_capacity(256);
    header.extend_from_slice(b"diff --git ");
    header.extend_from_slice(&quoted_with_prefix(b"a/", f.old_path()));
    header.push(b' ');
    header.extend_from_slice(&quoted_with_prefix(b"b/", f.new_path()));
    header.push(b'\n');
    let mut must_show = true;
    match f.status {
        Status::Added => line(&mut header, format!("new file mode {:06o}", f.new_mode())),
        Status::Deleted => line(
            &mut header,
            format!("deleted file mode {:06o}", f.old_mode()),
        ),
        _ => {
            must_show = f.old_mode() != f.new_mode();
            if must_show {
                line(&mut header, format!("old mode {:06o}", f.old_mode()));
                line(&mut header, format!("new mode {:06o}", f.new_mode()));
            }
        }
    }
    if matches!(f.status, Status::Renamed | Status::Copied) {
        must_show = true;
        let word = if f.status == Status::Renamed {
            "rename"
        } else {
            "copy"
        };
        line(&mut header, format!("similarity index {}%", f.similarity));
        header.extend_from_slice(format!("{word} from ").as_bytes());
        header.extend_from_slice(&quoted(f.old_path()));
        header.extend_from_slice(format!("\n{word} to ").as_bytes());
        header.extend_from_slice(&quoted(f.new_path()));
        header.push(b'\n');
    }
    let old_id = f.old.as_ref().map(|e| e.id).unwrap_or_else(|| null_of(f));
    let new_id = f.new.as_ref().map(|e| e.id).unwrap_or_else(|| null_of(f));
    if old_id != new_id {
        // Binary patches name their blobs in full.
        let hex = |id: &gix::ObjectId| match binary {
            Some(_) if f.is_binary() => id.to_string(),
            _ => abbrev.hex(id),
        };
        header.extend_from_slice(format!("index {}..{}", hex(&old_id), hex(&new_id)).as_bytes());
        if f.old_mode() == f.new_mode() {
            header.extend_from_slice(format!(" {:06o}", f.old_mode()).as_bytes());
        }
        header.push(b'\n');
    }
    let old_label = label(f.old.is_some(), b"a/", f.old_path());
    let new_label = label(f.new.is_some(), b"b/", f.new_path());
    match &f.content {
        Content::Binary { .. } if binary.is_some() => {
            out.extend_from_slice(&header);
            let patches = binary.expect("checked by the guard");
            patches.write(
                out,
                f.old.as_ref().map(|e| e.id),
                f.new.as_ref().map(|e| e.id),
            )?;
        }
        Content::Binary { .. } => {
            out.extend_from_slice(&header);
            out.extend_from_slice(b"Binary files ");
            out.extend_from_slice(&old_label);
            out.extend_from_slice(b" and ");
            out.extend_from_slice(&new_label);
            out.extend_from_slice(b" differ\n");
        }
        Content::Text(hunks) if !hunks.is_empty() => {
            out.extend_from_slice(&header);
            out.extend_from_slice(b"--- ");
            out.extend_from_slice(&old_label);
            if f.old.is_some() && f.old_path().contains(&b' ') {
                out.push(b'\t');
            }
            out.extend_from_slice(b"\n+++ ");
            out.extend_from_slice(&new_label);
            if f.new.is_some() && f.new_path().contains(&b' ') {
                out.push(b'\t');
            }
            out.push(b'\n');
            for h in hunks {
                write_hunk(out, h);
            }
        }
        Content::TooLarge => {
            out.extend_from_slice(&header);
        }
        _ if must_show => out.extend_from_slice(&header),
        _ => {}
    }
    Ok(())
}

fn null_of(f: &FileDiff) -> gix::ObjectId {
    gix::ObjectId::null(f.either().id.kind())
}

fn line(out: &mut Vec<u8>, text: String) {
    out.extend_from_slice(text.as_bytes());
    out.push(b'\n');
}

fn label(present: bool, prefix: &[u8], path: &[u8]) -> Vec<u8> {
    if present {
        quoted_with_prefix(prefix, path)
    } else {
        b"/dev/null".to_vec()
    }
}

/// `@@ -a,b +c,d @@ func` with git's omissions of `,1`.
pub fn hunk_header(h: &Hunk) -> Vec<u8> {
    let range = |start: u32, len: u32| {
        if len == 1 {
            format!("{start}")
        } else {
            format!("{start},{len}")
        }
    };
    let mut out = format!(
        "@@ -{} +{} @@",
        range(h.old_start, h.old_len),
        range(h.new_start, h.new_len)
    )
    .into_bytes();
    if !h.funcname.is_empty() {
        out.push(b' ');
        out.extend_from_slice(&h.funcname);
    }
    out
}

fn write_hunk(out: &mut Vec<u8>, h: &Hunk) {
    let header = hunk_header(h);
    out.extend_from_slice(&header[..utf8_prefix_len(&header)]);
    out.push(b'\n');
    for l in &h.lines {
        out.push(match l.kind {
            LineKind::Context => b' ',
            LineKind::Add => b'+',
            LineKind::Del => b'-',
        });
        out.extend_from_slice(&l.text);
        out.push(b'\n');
        if l.no_newline {
            out.extend_from_slice(b"\\ No newline at end of file\n");
        }
    }
}

/// How much of `text` git keeps when it cuts a hunk header at the first byte that does not
/// start a valid UTF-8 character (git also refuses U+FFFE and U+FFFF).
fn utf8_prefix_len(text: &[u8]) -> usize {
    let valid = match std::str::from_utf8(text) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&text[..e.valid_up_to()]).expect("checked prefix"),
    };
    valid
        .char_indices()
        .find(|&(_, c)| c == '\u{fffe}' || c == '\u{ffff}')
        .map_or(valid.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::utf8_prefix_len;

    #[test]
    fn hunk_headers_are_cut_where_utf8_breaks() {
        assert_eq!(utf8_prefix_len("@@ -1 +1 @@ caf\u{e9}".as_bytes()), 17);
        assert_eq!(utf8_prefix_len(b"@@ -1 +1 @@ caf\xe9 au lait"), 15);
        assert_eq!(utf8_prefix_len(b"@@ -1 +1 @@ \xd0\xbd\xd0"), 14);
        assert_eq!(utf8_prefix_len("@@ -1 +1 @@ a\u{ffff}b".as_bytes()), 13);
    }
}
