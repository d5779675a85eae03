//! Line diff of two texts into git's unified hunks: Myers with git's slider heuristics,
//! context merging, function-name headers and missing-newline markers.

use gix::bstr::BString;
use gix::diff::blob::{Algorithm, Diff, IndentHeuristic, IndentLevel, Token};
use hashbrown::hash_table::{self, HashTable};
use std::borrow::Cow;
use std::hash::BuildHasher;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Add,
    Del,
}

/// One line of a hunk; `old_no`/`new_no` are 1-based, 0 on the side it is absent from.
#[derive(Clone, Debug)]
pub struct Line {
    pub kind: LineKind,
    pub old_no: u32,
    pub new_no: u32,
    /// The line without its newline.
    pub text: BString,
    /// The line is the last of its file and has no newline.
    pub no_newline: bool,
}

/// A hunk with the numbers git prints in its `@@ -a,b +c,d @@` header.
#[derive(Clone, Debug)]
pub struct Hunk {
    pub old_start: u32,
    pub old_len: u32,
    pub new_start: u32,
    pub new_len: u32,
    /// The function name after the header (git's default rule), possibly empty.
    pub funcname: BString,
    pub lines: Vec<Line>,
}

/// The changes of one text file.
pub struct TextDiff {
    pub hunks: Vec<Hunk>,
    pub insertions: usize,
    pub deletions: usize,
}

/// Lines including their newline.
///
/// Every line of both sides of every diffed file is found here, so the newlines are found 64
/// bytes at a time, as a bit mask, instead of by a search per line (which cost more than
/// twice as much on git.git's sources, most of whose lines are short).
pub fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::with_capacity(data.len() / 24 + 1);
    let mut start = 0;
    let mut chunks = data.chunks_exact(64);
    for (n, chunk) in (&mut chunks).enumerate() {
        let mut newlines = newline_mask(chunk.try_into().expect("64 bytes"));
        while newlines != 0 {
            let end = 64 * n + newlines.trailing_zeros() as usize + 1;
            lines.push(&data[start..end]);
            start = end;
            newlines &= newlines - 1;
        }
    }
    let rest = data.len() - chunks.remainder().len();
    for (i, &byte) in chunks.remainder().iter().enumerate() {
        if byte == b'\n' {
            lines.push(&data[start..rest + i + 1]);
            start = rest + i + 1;
        }
    }
    if start < data.len() {
        lines.push(&data[start..]);
    }
    lines
}

/// Bit `i` set where `chunk[i]` is a newline (SSE2, which every x86-64 has).
#[cfg(target_arch = "x86_64")]
fn newline_mask(chunk: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    let mut mask = 0;
    for (i, part) in chunk.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of x86-64 itself, and `part` is 16 readable bytes (an
        // unaligned load needs no alignment).
        let found = unsafe {
            let bytes = _mm_loadu_si128(part.as_ptr().cast());
            _mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(b'\n' as i8)))
        };
        mask |= u64::from(found as u16) << (16 * i);
    }
    mask
}

/// Bit `i` set where `chunk[i]` is a newline.
#[cfg(not(target_arch = "x86_64"))]
fn newline_mask(chunk: &[u8; 64]) -> u64 {
    chunk
        .iter()
        .enumerate()
        .fold(0, |mask, (i, &b)| mask | u64::from(b == b'\n') << i)
}

/// git's whitespace (`isspace` of git's own ctype: space, tab, LF, CR).
fn is_git_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn comparison_key(line: &[u8], ignore_ws: bool) -> Cow<'_, [u8]> {
    if ignore_ws {
        Cow::Owned(line.iter().copied().filter(|&b| !is_git_space(b)).collect())
    } else {
        Cow::Borrowed(line)
    }
}

/// git's default function-name rule: a line starting with a letter, `_` or `$`, cut to 80 bytes
/// and stripped of trailing whitespace.
fn funcname_of(line: &[u8]) -> Option<&[u8]> {
    let first = *line.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
        return None;
    }
    let mut text = &line[..line.len().min(80)];
    while let Some((&last, rest)) = text.split_last() {
        if !is_git_space(last) {
            break;
        }
        text = rest;
    }
    Some(text)
}

/// The changed ranges of a line diff, as (old range, new range) in 0-based lines.
pub fn changed_ranges(
    old: &[&[u8]],
    new: &[&[u8]],
    ignore_ws: bool,
) -> Vec<(std::ops::Range<u32>, std::ops::Range<u32>)> {
    let tokens = Tokens::new(old, new, ignore_ws);
    let mut diff = Diff::default();
    diff.compute_with(
        Algorithm::Myers,
        &tokens.before,
        &tokens.after,
        tokens.count(),
    );
    diff.postprocess_with(
        &tokens.before,
        &tokens.after,
        IndentHeuristic::new(|token| tokens.indent(token)),
    );
    diff.hunks().map(|h| (h.before, h.after)).collect()
}

/// Both sides' lines as tokens, equal where the lines' comparison keys are. Only the lines
/// between the common head and tail (most of a file is head and tail, in most commits) are
/// hashed into a table; a line of the head or tail is looked up in it, and one that equals no
/// line between gets a token of its own (its old line number above the table's tokens).
///
/// The diff sees what interning every line would give. Myers searches only between the common
/// ends, and counts (as git does, over both whole files) only the tokens it finds there, which
/// are the table's. A slider moves over lines equal to the changed lines it moves; a line of
/// its own equals none, and its interned token would not either.
struct Tokens<'a> {
    before: Vec<Token>,
    after: Vec<Token>,
    /// The comparison keys of the table's tokens, by token.
    keys: Vec<Cow<'a, [u8]>>,
    old: &'a [&'a [u8]],
    ignore_ws: bool,
}

/// Comparison keys by token, and a hash table of the tokens (four bytes a slot, so that a
/// table of a whole rewritten file stays in the cache; the key is looked at only when the
/// hashes agree).
struct Table<'a> {
    keys: Vec<Cow<'a, [u8]>>,
    slots: HashTable<Token>,
    hasher: foldhash::fast::RandomState,
    lengths: KeyLengths,
}

impl<'a> Table<'a> {
    fn with_capacity(capacity: usize) -> Table<'a> {
        Table {
            keys: Vec::with_capacity(capacity),
            slots: HashTable::with_capacity(capacity),
            hasher: Default::default(),
            lengths: KeyLengths([0; 64]),
        }
    }

    /// The token of `key`, a new one if it is new.
    fn intern(&mut self, key: Cow<'a, [u8]>) -> Token {
        let hash = self.hasher.hash_one(key.as_ref());
        let (keys, hasher) = (&self.keys, &self.hasher);
        let entry = self.slots.entry(
            hash,
            |token| keys[token.0 as usize] == key,
            |token| hasher.hash_one(keys[token.0 as usize].as_ref()),
        );
        match entry {
            hash_table::Entry::Occupied(slot) => *slot.get(),
            hash_table::Entry::Vacant(slot) => {
                let token = Token(self.keys.len() as u32);
                slot.insert(token);
                self.lengths.add(key.len());
                self.keys.push(key);
                token
            }
        }
    }

    /// The token of `key` if it has one (not hashed when no key has its length).
    fn get(&self, key: &[u8]) -> Option<Token> {
        if !self.lengths.may_hold(key.len()) {
            return None;
        }
        let hash = self.hasher.hash_one(key);
        let keys = &self.keys;
        self.slots
            .find(hash, |token| keys[token.0 as usize].as_ref() == key)
            .copied()
    }
}

/// The lengths of a table's keys, modulo 4,096: a line of no such length is in no table
/// without being hashed (most lines of a head or tail are of lengths no changed line has).
struct KeyLengths([u64; 64]);

impl KeyLengths {
    fn add(&mut self, len: usize) {
        let n = len % 4096;
        self.0[n / 64] |= 1 << (n % 64);
    }

    fn may_hold(&self, len: usize) -> bool {
        let n = len % 4096;
        self.0[n / 64] & (1 << (n % 64)) != 0
    }
}

impl<'a> Tokens<'a> {
    fn new(old: &'a [&'a [u8]], new: &'a [&'a [u8]], ignore_ws: bool) -> Tokens<'a> {
        let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let tail = old[head..]
            .iter()
            .rev()
            .zip(new[head..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let (old_middle, new_middle) = (head..old.len() - tail, head..new.len() - tail);
        let mut table = Table::with_capacity(old_middle.len() + new_middle.len());
        let mut intern = |line: &'a [u8]| table.intern(comparison_key(line, ignore_ws));
        let old_tokens: Vec<Token> = old[old_middle.clone()].iter().map(|l| intern(l)).collect();
        let new_tokens: Vec<Token> = new[new_middle].iter().map(|l| intern(l)).collect();
        let own = table.keys.len() as u32;
        let end_token = |i: usize| {
            table
                .get(&comparison_key(old[i], ignore_ws))
                .unwrap_or(Token(own + i as u32))
        };
        let mut before = Vec::with_capacity(old.len());
        before.extend((0..head).map(end_token));
        before.extend(old_tokens);
        before.extend((old_middle.end..old.len()).map(end_token));
        let mut after = Vec::with_capacity(new.len());
        after.extend_from_slice(&before[..head]);
        after.extend(new_tokens);
        after.extend_from_slice(&before[old_middle.end..]);
        Tokens {
            before,
            after,
            keys: table.keys,
            old,
            ignore_ws,
        }
    }

    /// Tokens given, the table's and the head's and tail's own.
    fn count(&self) -> u32 {
        self.keys.len() as u32 + self.old.len() as u32
    }

    /// The indentation of a token's comparison key, as the slider heuristic measures it.
    fn indent(&self, token: Token) -> IndentLevel {
        let index = token.0 as usize;
        let key = match self.keys.get(index) {
            Some(key) => Cow::Borrowed(key.as_ref()),
            None => comparison_key(self.old[index - self.keys.len()], self.ignore_ws),
        };
        IndentLevel::for_ascii_line(key.iter().copied(), 8)
    }
}

/// Diffs two texts. When the hunks would hold more than `max_lines` lines, no hunks are built
/// and the error holds the counts alone: (insertions, deletions).
pub fn diff_text(
    old: &[u8],
    new: &[u8],
    context: u32,
    ignore_ws: bool,
    max_lines: usize,
) -> Result<TextDiff, (usize, usize)> {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let changes = changed_ranges(&old_lines, &new_lines, ignore_ws);
    let deletions: usize = changes.iter().map(|(b, _)| b.len()).sum();
    let insertions: usize = changes.iter().map(|(_, a)| a.len()).sum();
    if deletions + insertions > max_lines {
        return Err((insertions, deletions));
    }
    let builder = HunkBuilder {
        old: &old_lines,
        new: &new_lines,
        context,
    };
    let hunks = builder.build(&changes);
    let total: usize = hunks.iter().map(|h| h.lines.len()).sum();
    if total > max_lines {
        return Err((insertions, deletions));
    }
    Ok(TextDiff {
        hunks,
        insertions,
        deletions,
    })
}

/// The changed lines of two texts, (insertions, deletions), without building hunks.
pub fn count_changes(old: &[u8], new: &[u8], ignore_ws: bool) -> (usize, usize) {
    let changes = changed_ranges(&split_lines(old), &split_lines(new), ignore_ws);
    changes
        .iter()
        .fold((0, 0), |(i, d), (b, a)| (i + a.len(), d + b.len()))
}

struct HunkBuilder<'a> {
    old: &'a [&'a [u8]],
    new: &'a [&'a [u8]],
    context: u32,
}

type Change = (std::ops::Range<u32>, std::ops::Range<u32>);

impl HunkBuilder<'_> {
    fn build(&self, changes: &[Change]) -> Vec<Hunk> {
        let mut hunks = Vec::new();
        let mut funcname: &[u8] = b"";
        let mut searched_to: i64 = -1;
        let mut i = 0;
        while i < changes.len() {
            let mut j = i;
            while j + 1 < changes.len()
                && changes[j + 1].0.start - changes[j].0.end <= 2 * self.context
            {
                j += 1;
            }
            let group = &changes[i..=j];
            let s1 = group[0].0.start.saturating_sub(self.context);
            let start = i64::from(s1) - 1;
            let mut l = start;
            while l > searched_to && l >= 0 {
                if let Some(f) = funcname_of(self.old[l as usize]) {
                    funcname = f;
                    break;
                }
                l -= 1;
            }
            searched_to = start;
            hunks.push(self.hunk(group, s1, funcname));
            i = j + 1;
        }
        hunks
    }

    fn hunk(&self, group: &[Change], s1: u32, funcname: &[u8]) -> Hunk {
        let first = &group[0];
        let last = &group[group.len() - 1];
        let s2 = first.1.start - (first.0.start - s1);
        let e1 = (last.0.end + self.context).min(self.old.len() as u32);
        let e2 = last.1.end + (e1 - last.0.end);
        let mut lines = Vec::new();
        let (mut o, mut n) = (s1, s2);
        for (before, after) in group {
            self.context_lines(&mut lines, &mut o, &mut n, before.start);
            for k in before.clone() {
                lines.push(self.line(LineKind::Del, self.old, k, k + 1, 0));
            }
            for k in after.clone() {
                lines.push(self.line(LineKind::Add, self.new, k, 0, k + 1));
            }
            o = before.end;
            n = after.end;
        }
        self.context_lines(&mut lines, &mut o, &mut n, e1);
        let (old_len, new_len) = (e1 - s1, e2 - s2);
        Hunk {
            old_start: if old_len == 0 { s1 } else { s1 + 1 },
            old_len,
            new_start: if new_len == 0 { s2 } else { s2 + 1 },
            new_len,
            funcname: funcname.into(),
            lines,
        }
    }

    /// Unchanged lines up to old line `until`, taken from the new side as git does.
    fn context_lines(&self, lines: &mut Vec<Line>, o: &mut u32, n: &mut u32, until: u32) {
        while *o < until {
            lines.push(self.line(LineKind::Context, self.new, *n, *o + 1, *n + 1));
            *o += 1;
            *n += 1;
        }
    }

    fn line(&self, kind: LineKind, side: &[&[u8]], index: u32, old_no: u32, new_no: u32) -> Line {
        let raw = side[index as usize];
        let (text, no_newline) = match raw.strip_suffix(b"\n") {
            Some(t) => (t, false),
            None => (raw, true),
        };
        Line {
            kind,
            old_no,
            new_no,
            text: text.into(),
            no_newline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn funcname_follows_gits_default_rule() {
        assert_eq!(
            funcname_of(b"static int x(void)  \n"),
            Some(&b"static int x(void)"[..])
        );
        assert_eq!(funcname_of(b"  indented\n"), None);
        assert_eq!(funcname_of(b"$var\n"), Some(&b"$var"[..]));
        assert_eq!(funcname_of(&[b'a'; 100]).map(<[u8]>::len), Some(80));
    }

    #[test]
    fn hunks_carry_numbers_and_newline_markers() {
        let d = diff_text(b"a\nb\nc\n", b"a\nB\nc", 3, false, 100).unwrap();
        assert_eq!((d.insertions, d.deletions), (2, 2));
        let h = &d.hunks[0];
        assert_eq!(
            (h.old_start, h.old_len, h.new_start, h.new_len),
            (1, 3, 1, 3)
        );
        assert!(h.lines.last().unwrap().no_newline);
        assert_eq!(diff_text(b"a\n", b"b\n", 3, false, 1).err(), Some((1, 1)));
        assert_eq!(count_changes(b"a\nb\nc\n", b"a\nB\nc\nd\n", false), (2, 1));
    }

    /// What the diff gave when every line of both sides was interned.
    fn changed_ranges_interning_every_line(
        old: &[&[u8]],
        new: &[&[u8]],
        ignore_ws: bool,
    ) -> Vec<Change> {
        use gix::diff::blob::InternedInput;
        let mut input = InternedInput::default();
        input.update_before(old.iter().map(|l| comparison_key(l, ignore_ws)));
        input.update_after(new.iter().map(|l| comparison_key(l, ignore_ws)));
        let mut diff = Diff::compute(Algorithm::Myers, &input);
        diff.postprocess_lines(&input);
        diff.hunks().map(|h| (h.before, h.after)).collect()
    }

    /// Lines that repeat, differ only in whitespace, are blank or indented, so that sliders
    /// move and the heuristic weighs indentation.
    const VOCABULARY: &[&[u8]] = &[
        b"\n",
        b"}\n",
        b"\t}\n",
        b"a\n",
        b"b\n",
        b" a\n",
        b"\ta;\n",
        b"\t\tb;\n",
        b"int f(void)\n",
        b"{\n",
        b"  \n",
        b"c",
    ];

    fn lines_of(picks: &[usize]) -> Vec<&'static [u8]> {
        picks
            .iter()
            .map(|&i| VOCABULARY[i % VOCABULARY.len()])
            .collect()
    }

    #[test]
    fn ends_hashed_or_not_give_the_same_diff_in_these_cases() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            (b"a\nb\nc\nd\n", b"a\nx\nc\nd\n", false),
            (b"a\na\na\n", b"a\na\n", false),
            (b"a\nb\n", b"a\nb\n", false),
            (b"", b"a\n", false),
            (b"x\n", b"", false),
            (b"a\n b\nc\nb\n", b"a\nb\nc\nb\nb\n", true),
            (b"q\nb\nc", b"b\nc\nb\nc", false),
        ];
        for &(old, new, ignore_ws) in cases {
            let (old, new) = (split_lines(old), split_lines(new));
            assert_eq!(
                changed_ranges(&old, &new, ignore_ws),
                changed_ranges_interning_every_line(&old, &new, ignore_ws),
                "{old:?} {new:?}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// Lines are found as bstr's `lines_with_terminator` finds them, whatever the bytes
        /// and wherever the newlines fall against the 64-byte steps.
        #[test]
        fn lines_split_as_bstr_splits_them(
            text in proptest::collection::vec(proptest::prop_oneof![
                3 => proptest::prelude::Just(b'\n'),
                1 => proptest::prelude::Just(b'\r'),
                8 => proptest::prelude::any::<u8>(),
            ], 0..300),
        ) {
            use gix::bstr::ByteSlice;
            let expected: Vec<&[u8]> = text.lines_with_terminator().collect();
            proptest::prop_assert_eq!(split_lines(&text), expected);
        }

        /// Whatever the texts and edits, looking the common ends up instead of interning them
        /// changes no hunk.
        #[test]
        fn ends_hashed_or_not_give_the_same_diff(
            old in proptest::collection::vec(0usize..12, 0..60),
            edits in proptest::collection::vec((0usize..60, 0usize..4, proptest::collection::vec(0usize..12, 0..5)), 0..4),
            ignore_ws in proptest::bool::ANY,
        ) {
            let mut new = old.clone();
            for (at, removed, inserted) in edits {
                let at = at.min(new.len());
                let removed = removed.min(new.len() - at);
                new.splice(at..at + removed, inserted);
            }
            let (old, new) = (lines_of(&old), lines_of(&new));
            proptest::prop_assert_eq!(
                changed_ranges(&old, &new, ignore_ws),
                changed_ranges_interning_every_line(&old, &new, ignore_ws)
            );
        }
    }
}
