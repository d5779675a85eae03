//! `GIT binary patch` sections as `git format-patch` (`--binary`) writes them: each direction
//! as a zlib-deflated literal or delta, whichever is smaller, in base85 lines.

use super::delta;
use crate::git::Repo;
use crate::git::error::GitError;
use gix::ObjectId;
use std::sync::Arc;

/// Characters of git's base85 alphabet.
const BASE85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
/// Data bytes per patch line.
const LINE_BYTES: usize = 52;

/// Writes binary patches with the repository's blobs and zlib settings.
pub struct BinaryPatches<'r> {
    repo: &'r Repo<'r>,
    level: u32,
}

impl<'r> BinaryPatches<'r> {
    /// git's zlib level: `core.loosecompression`, else `core.compression`, else 1 (fastest).
    pub fn new(repo: &'r Repo<'r>) -> Self {
        let config = repo.config_snapshot();
        let level = ["core.loosecompression", "core.compression"]
            .iter()
            .find_map(|key| config.integer(key))
            .and_then(|l| match l {
                -1 => Some(6),
                0..=9 => Some(l as u32),
                _ => None,
            })
            .unwrap_or(1);
        BinaryPatches { repo, level }
    }

    /// Appends the section for a file going from blob `old` to blob `new` (None: no file).
    pub fn write(
        &self,
        out: &mut Vec<u8>,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
    ) -> Result<(), GitError> {
        let (old, new) = (self.blob(old)?, self.blob(new)?);
        out.extend_from_slice(b"GIT binary patch\n");
        self.write_direction(out, &old, &new);
        self.write_direction(out, &new, &old);
        Ok(())
    }

    fn blob(&self, id: Option<ObjectId>) -> Result<Arc<Vec<u8>>, GitError> {
        match id {
            None => Ok(Arc::default()),
            Some(id) => self.repo.read_named_blob(&id),
        }
    }

    fn write_direction(&self, out: &mut Vec<u8>, from: &[u8], to: &[u8]) {
        let literal = deflate(to, self.level);
        let delta = delta::delta(from, to, literal.len())
            .map(|d| (d.len(), deflate(&d, self.level)))
            .filter(|(_, deflated)| deflated.len() < literal.len());
        let data = match delta {
            Some((size, deflated)) => {
                out.extend_from_slice(format!("delta {size}\n").as_bytes());
                deflated
            }
            None => {
                out.extend_from_slice(format!("literal {}\n", to.len()).as_bytes());
                literal
            }
        };
        for chunk in data.chunks(LINE_BYTES) {
            out.push(line_length_char(chunk.len()));
            write_base85(out, chunk);
            out.push(b'\n');
        }
        out.push(b'\n');
    }
}

/// zlib stream of `data`, as the system zlib (which git uses) writes it in one call.
fn deflate(data: &[u8], level: u32) -> Vec<u8> {
    let mut z = flate2::Compress::new(flate2::Compression::new(level), true);
    let mut out = Vec::with_capacity(data.len() + data.len() / 8 + 64);
    loop {
        let status = z
            .compress_vec(data, &mut out, flate2::FlushCompress::Finish)
            .expect("deflating into memory cannot fail");
        if status == flate2::Status::StreamEnd {
            return out;
        }
        out.reserve(out.capacity());
    }
}

/// `A`–`Z` for 1–26 bytes, `a`–`z` for 27–52.
fn line_length_char(len: usize) -> u8 {
    if len <= 26 {
        b'A' + len as u8 - 1
    } else {
        b'a' + (len - 26) as u8 - 1
    }
}

/// Five characters per four bytes (big-endian), the last group padded with zero bytes.
fn write_base85(out: &mut Vec<u8>, data: &[u8]) {
    for group in data.chunks(4) {
        let mut word = [0u8; 4];
        word[..group.len()].copy_from_slice(group);
        let mut value = u32::from_be_bytes(word);
        let mut chars = [0u8; 5];
        for c in chars.iter_mut().rev() {
            *c = BASE85[(value % 85) as usize];
            value /= 85;
        }
        out.extend_from_slice(&chars);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base85_matches_git() {
        // git's encoding of an empty zlib stream at level 1 (`literal 0`).
        let mut out = Vec::new();
        let empty = deflate(b"", 1);
        out.push(line_length_char(empty.len()));
        write_base85(&mut out, &empty);
        assert_eq!(out, b"HcmV?d00001");
    }

    #[test]
    fn line_lengths() {
        assert_eq!(line_length_char(1), b'A');
        assert_eq!(line_length_char(26), b'Z');
        assert_eq!(line_length_char(27), b'a');
        assert_eq!(line_length_char(52), b'z');
    }
}
