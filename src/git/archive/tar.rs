//! The tar format as git-archive writes it: ustar headers owned by root, permissions after
//! git's default `tar.umask` of 002, the commit id in a pax global header (so
//! `git get-tar-commit-id` reads it), long names split into the ustar prefix or carried by pax
//! extended headers named after the object, and the end padded to a whole 10 KiB record — the
//! same bytes as `git archive`.

use super::members::{Archive, Entry, MemberKind, walk};
use std::io::{self, Write};

const BLOCK: usize = 512;
const RECORD: u64 = 20 * BLOCK as u64;
const NAME_LEN: usize = 100;
const PREFIX_LEN: usize = 155;

pub fn write(repo: &gix::Repository, archive: &Archive, out: &mut dyn Write) -> io::Result<()> {
    let mut tar = TarWriter {
        out,
        mtime: archive.mtime.max(0) as u64,
        written: 0,
    };
    let comment = pax_record("comment", archive.commit.to_string().as_bytes());
    tar.member(b"pax_global_header", b"", b'g', 0o666, &comment, b"")?;
    walk(repo, archive, &mut |entry| tar.entry(entry))?;
    tar.finish()
}

struct TarWriter<'a> {
    out: &'a mut dyn Write,
    mtime: u64,
    written: u64,
}

impl TarWriter<'_> {
    fn entry(&mut self, entry: Entry<'_>) -> io::Result<()> {
        let (typeflag, mode, data, link): (u8, u32, &[u8], &[u8]) = match entry.kind {
            MemberKind::Directory => (b'5', 0o775, b"", b""),
            MemberKind::File => (b'0', 0o664, entry.data, b""),
            MemberKind::Executable => (b'0', 0o775, entry.data, b""),
            MemberKind::Symlink => (b'2', 0o777, b"", entry.data),
        };
        let hex = entry.id.to_string();
        let mut ext = Vec::new();
        let data_name = format!("{hex}.data").into_bytes();
        let (prefix, name) = match split_path(entry.path) {
            Some(split) => split,
            None => {
                ext.extend(pax_record("path", entry.path));
                (&b""[..], data_name.as_slice())
            }
        };
        let see_pax = format!("see {hex}.paxheader").into_bytes();
        let link = if link.len() > NAME_LEN {
            ext.extend(pax_record("linkpath", link));
            see_pax.as_slice()
        } else {
            link
        };
        if !ext.is_empty() {
            let pax_name = format!("{hex}.paxheader");
            self.member(pax_name.as_bytes(), b"", b'x', 0o666, &ext, b"")?;
        }
        self.member(name, prefix, typeflag, mode, data, link)
    }

    /// One header and its data, padded to whole blocks.
    fn member(
        &mut self,
        name: &[u8],
        prefix: &[u8],
        typeflag: u8,
        mode: u32,
        data: &[u8],
        link: &[u8],
    ) -> io::Result<()> {
        let mut h = [0u8; BLOCK];
        copy_cut(&mut h[0..100], name);
        octal(&mut h[100..108], u64::from(mode));
        octal(&mut h[108..116], 0);
        octal(&mut h[116..124], 0);
        octal(&mut h[124..136], data.len() as u64);
        octal(&mut h[136..148], self.mtime);
        h[156] = typeflag;
        copy_cut(&mut h[157..257], link);
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        copy_cut(&mut h[265..297], b"root");
        copy_cut(&mut h[297..329], b"root");
        octal(&mut h[329..337], 0);
        octal(&mut h[337..345], 0);
        copy_cut(&mut h[345..500], prefix);
        h[148..156].fill(b' ');
        let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
        octal(&mut h[148..156], sum);
        self.put(&h)?;
        self.put(data)?;
        let pad = (BLOCK - data.len() % BLOCK) % BLOCK;
        self.put(&[0u8; BLOCK][..pad])
    }

    /// Two empty blocks, then zeros up to a whole record.
    fn finish(mut self) -> io::Result<()> {
        self.put(&[0u8; 2 * BLOCK])?;
        let pad = (RECORD - self.written % RECORD) % RECORD;
        self.put(&vec![0u8; pad as usize])?;
        self.out.flush()
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.written += bytes.len() as u64;
        self.out.write_all(bytes)
    }
}

/// A name that does not fit the header's name field goes into prefix and name, split at a `/`
/// as git does; `None` when no split fits (then a pax header carries it).
fn split_path(path: &[u8]) -> Option<(&[u8], &[u8])> {
    if path.len() <= NAME_LEN {
        return Some((b"", path));
    }
    let mut i = path.len();
    if path[i - 1] == b'/' {
        i -= 1;
    }
    i = i.min(PREFIX_LEN);
    loop {
        i -= 1;
        if i == 0 || path[i] == b'/' {
            break;
        }
    }
    let rest = &path[i + 1..];
    (i > 0 && rest.len() <= NAME_LEN).then(|| (&path[..i], rest))
}

/// A pax record: `<length> <key>=<value>\n`, the length counting itself.
fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
    let body = key.len() + value.len() + 3;
    let mut len = body + 1;
    while len != body + len.to_string().len() {
        len = body + len.to_string().len();
    }
    let mut record = format!("{len} {key}=").into_bytes();
    record.extend_from_slice(value);
    record.push(b'\n');
    record
}

/// `value` in octal, zero-padded to fill `field` but its last byte, which stays NUL.
fn octal(field: &mut [u8], value: u64) {
    let width = field.len() - 1;
    let text = format!("{value:0width$o}");
    field[..width].copy_from_slice(&text.as_bytes()[text.len() - width..]);
    field[width] = 0;
}

fn copy_cut(field: &mut [u8], value: &[u8]) {
    let n = value.len().min(field.len());
    field[..n].copy_from_slice(&value[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_count_their_own_length() {
        let r = pax_record("comment", &[b'a'; 40]);
        assert_eq!(r.len(), 52);
        assert!(r.starts_with(b"52 comment="));
        let r = pax_record("path", &[b'x'; 91]);
        assert_eq!(r.len(), 101);
        assert!(r.starts_with(b"101 path="));
    }

    #[test]
    fn long_paths_split_at_a_slash_like_git() {
        let dir = "d".repeat(90);
        let path = format!("{dir}/{}", "f".repeat(30));
        assert_eq!(
            split_path(path.as_bytes()),
            Some((dir.as_bytes(), "f".repeat(30).as_bytes()))
        );
        assert_eq!(
            split_path(format!("a/{}", "n".repeat(120)).as_bytes()),
            None
        );
        assert_eq!(split_path(b"short"), Some((&b""[..], &b"short"[..])));
    }

    #[test]
    fn octal_fields_are_nul_terminated() {
        let mut f = [0xffu8; 8];
        octal(&mut f, 0o755);
        assert_eq!(&f, b"0000755\0");
    }
}
