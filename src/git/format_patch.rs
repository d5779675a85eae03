//! `git format-patch --stdout` text for single commits: mbox headers (RFC 2047 where git
//! encodes), message, `---`, diffstat and summary, patch, signature.

use super::Repo;
use super::diff::{self, Abbrev, BinaryPatches, DiffOptions, Limits};
use super::encoding::reencode;
use super::error::GitError;
use gix::ObjectId;
use gix::bstr::ByteSlice;

/// Width of the diffstat in mails (git's `MAIL_DEFAULT_WRAP`).
const STAT_WIDTH: i64 = 72;
/// Header lines are wrapped at this width.
const HEADER_WIDTH: usize = 78;
/// Longest encoded line of RFC 2047 words.
const ENCODED_WIDTH: usize = 76;

/// What the mails of one patch share: the diff options, the path limit (cgit's `(limited to
/// 'PATH')` patches), the signature, and the repository's abbreviations and zlib level.
pub struct Mails<'r> {
    repo: &'r Repo<'r>,
    opts: DiffOptions,
    path: Option<&'r [u8]>,
    signature: &'r str,
    abbrev: Abbrev,
    binary: BinaryPatches<'r>,
}

impl<'r> Mails<'r> {
    pub fn new(
        repo: &'r Repo<'r>,
        opts: DiffOptions,
        path: Option<&'r [u8]>,
        signature: &'r str,
    ) -> Self {
        Mails {
            repo,
            opts,
            path,
            signature,
            abbrev: Abbrev::new(repo),
            binary: BinaryPatches::new(repo),
        }
    }

    /// Appends the mail of `commit`, diffed against its first parent.
    pub fn write(&self, commit: ObjectId, out: &mut Vec<u8>) -> Result<(), GitError> {
        let repo = self.repo;
        let object = repo.find_commit(commit).map_err(GitError::internal)?;
        let c = object.decode().map_err(GitError::internal)?;
        let author = c.author().map_err(GitError::internal)?;
        let parent = c.parents().next();
        let tree = diff::diff_commits(repo, parent, commit, &self.opts, self.path, Limits::RAW)?;
        if tree.truncated {
            return Err(GitError::internal_msg("The diff is too large to be shown"));
        }
        out.extend_from_slice(format!("From {commit} Mon Sep 17 00:00:00 2001\n").as_bytes());
        let encoding = c.encoding.map(|e| e.to_vec());
        let name = reencode(author.name.trim(), encoding.as_deref());
        let message = reencode(c.message, encoding.as_deref());
        write_from(out, &name, author.email.trim());
        let date = author
            .time()
            .map_err(GitError::internal)?
            .format(gix::date::time::format::GIT_RFC2822)
            .map_err(GitError::internal)?;
        out.extend_from_slice(format!("Date: {date}\n").as_bytes());
        let (subject, body) = split_message(&message);
        out.extend_from_slice(b"Subject: ");
        if needs_encoding(&subject) {
            add_rfc2047(out, &subject, 9, false);
        } else {
            add_wrapped(out, &subject, 9);
        }
        out.push(b'\n');
        if message.iter().any(|&b| non_ascii(b)) {
            out.extend_from_slice(
                b"MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n\
                  Content-Transfer-Encoding: 8bit\n",
            );
        }
        out.push(b'\n');
        out.extend_from_slice(&body);
        if !tree.files.is_empty() {
            out.extend_from_slice(b"---\n");
            diff::stat::write_stat(out, &tree, STAT_WIDTH);
            diff::stat::write_summary(out, &tree);
            out.push(b'\n');
            if let Some(path) = self.path {
                out.extend_from_slice(b"(limited to '");
                out.extend_from_slice(path);
                out.extend_from_slice(b"')\n\n");
            }
            diff::patch::write_patch(out, &tree.files, &self.abbrev, Some(&self.binary))?;
        }
        out.extend_from_slice(format!("-- \n{}\n\n", self.signature).as_bytes());
        Ok(())
    }
}

fn write_from(out: &mut Vec<u8>, name: &[u8], email: &[u8]) {
    out.extend_from_slice(b"From: ");
    let start = out.len() - 6;
    if needs_encoding(name) {
        add_rfc2047(out, name, 6, true);
    } else if name.iter().any(|b| b"()<>@,;:\\\".[]".contains(b)) {
        let mut quoted = vec![b'"'];
        for &b in name {
            if b == b'"' || b == b'\\' {
                quoted.push(b'\\');
            }
            quoted.push(b);
        }
        quoted.push(b'"');
        add_wrapped(out, &quoted, 6);
    } else {
        add_wrapped(out, name, 6);
    }
    let line_len = out.len() - out[start..].rfind(b"\n").map_or(start, |i| start + i + 1);
    let max = if needs_encoding(name) {
        ENCODED_WIDTH
    } else {
        HEADER_WIDTH
    };
    if max < line_len + 2 + email.len() + 1 {
        out.push(b'\n');
    }
    out.extend_from_slice(b" <");
    out.extend_from_slice(email);
    out.extend_from_slice(b">\n");
}

/// The subject (first paragraph joined by spaces) and the body lines as git prints them:
/// trailing whitespace trimmed, leading and trailing blank lines dropped.
fn split_message(message: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut lines = message.lines().map(|l| l.trim_end()).peekable();
    while lines.peek().is_some_and(|l| l.is_empty()) {
        lines.next();
    }
    let mut subject = Vec::new();
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        if !subject.is_empty() {
            subject.push(b' ');
        }
        subject.extend_from_slice(line);
    }
    let mut body_lines: Vec<&[u8]> = lines.skip_while(|l| l.is_empty()).collect();
    while body_lines.last().is_some_and(|l| l.is_empty()) {
        body_lines.pop();
    }
    let mut body = Vec::new();
    for line in body_lines {
        body.extend_from_slice(line);
        body.push(b'\n');
    }
    (subject, body)
}

fn non_ascii(b: u8) -> bool {
    b >= 0x80 || b == 0x1b
}

fn needs_encoding(text: &[u8]) -> bool {
    text.iter().any(|&b| non_ascii(b) || b == b'\n') || text.windows(2).any(|w| w == b"=?")
}

/// git's `strbuf_add_wrapped_bytes` for one header: greedy word wrap at 78 columns, the first
/// line already holding `used` columns, continuation lines indented by one space.
fn add_wrapped(out: &mut Vec<u8>, text: &[u8], used: usize) {
    let mut width = used;
    let mut bol = 0;
    let mut space: Option<usize> = Some(0);
    let mut indent = 0;
    let mut i = 0;
    loop {
        let c = text.get(i).copied();
        if c.is_none() || c.is_some_and(|c| c.is_ascii_whitespace()) {
            if width <= HEADER_WIDTH || space.is_none() {
                let start = match space {
                    Some(s) => s,
                    None => {
                        out.extend(std::iter::repeat_n(b' ', indent));
                        bol
                    }
                };
                if c.is_none() && i == bol && space.is_none() {
                    return;
                }
                out.extend_from_slice(&text[start..i]);
                if c.is_none() {
                    return;
                }
                space = Some(i);
                width += 1;
                i += 1;
            } else {
                out.push(b'\n');
                let s = space.expect("checked above");
                i = s + usize::from(text.get(s).is_some_and(|c| c.is_ascii_whitespace()));
                bol = i;
                space = None;
                width = 1;
                indent = 1;
            }
            continue;
        }
        width += 1;
        i += 1;
    }
}

/// RFC 2047 Q-encoding as git writes it (`=?UTF-8?q?…?=`, lines of at most 76 columns).
fn add_rfc2047(out: &mut Vec<u8>, text: &[u8], used: usize, address: bool) {
    out.extend_from_slice(b"=?UTF-8?q?");
    let mut line_len = used + 10;
    let mut i = 0;
    while i < text.len() {
        let len = utf8_char_len(&text[i..]);
        let b = text[i];
        let special = len > 1 || is_special(b, address);
        let encoded_len = if special { 3 * len } else { 1 };
        if line_len + encoded_len + 2 > ENCODED_WIDTH {
            out.extend_from_slice(b"?=\n =?UTF-8?q?");
            line_len = 11;
        }
        for &byte in &text[i..i + len] {
            if special {
                out.extend_from_slice(format!("={byte:02X}").as_bytes());
            } else {
                out.push(byte);
            }
        }
        line_len += encoded_len;
        i += len;
    }
    out.extend_from_slice(b"?=");
}

fn utf8_char_len(bytes: &[u8]) -> usize {
    let len = match bytes[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    if len > 1 && bytes.len() >= len && std::str::from_utf8(&bytes[..len]).is_ok() {
        len
    } else {
        1
    }
}

fn is_special(b: u8, address: bool) -> bool {
    if non_ascii(b) || !(0x20..0x7f).contains(&b) {
        return true;
    }
    if b == b' ' || b == b'=' || b == b'?' || b == b'_' {
        return true;
    }
    address && !(b.is_ascii_alphanumeric() || b"!*+-/".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_subjects_wrap_like_git() {
        let mut out = b"Subject: ".to_vec();
        add_wrapped(
            &mut out,
            b"a very long subject line that goes on and on and on beyond seventy eight columns",
            9,
        );
        assert_eq!(
            out,
            b"Subject: a very long subject line that goes on and on and on beyond seventy\n eight columns"
        );
    }

    #[test]
    fn non_ascii_names_are_q_encoded() {
        let mut out = Vec::new();
        add_rfc2047(&mut out, "Jürgen Ö".as_bytes(), 6, true);
        assert_eq!(out, b"=?UTF-8?q?J=C3=BCrgen=20=C3=96?=");
    }
}
