//! git's `--stat` and `--summary` text (as `git format-patch` prints them).

use super::quote::{needs_quoting, quoted};
use super::{FileDiff, Status, TreeDiff};

/// The name git shows for a file in a diffstat: `a => b` with common directories factored out
/// (`dir/{a => b}`) for renames, quoted when unusual.
pub fn stat_name(f: &FileDiff) -> Vec<u8> {
    if !matches!(f.status, Status::Renamed | Status::Copied) {
        return quoted(f.new_path());
    }
    rename_name(f.old_path(), f.new_path())
}

fn rename_name(a: &[u8], b: &[u8]) -> Vec<u8> {
    if needs_quoting(a) || needs_quoting(b) {
        let mut out = quoted(a);
        out.extend_from_slice(b" => ");
        out.extend_from_slice(&quoted(b));
        return out;
    }
    let mut prefix = 0;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            break;
        }
        if *x == b'/' {
            prefix = i + 1;
        }
    }
    // Common suffix starting at a '/', not reaching into the prefix (git lets it touch the
    // prefix's own slash).
    let mut suffix = 0;
    let adjust = usize::from(prefix > 0);
    let (mut i, mut j) = (a.len() as isize, b.len() as isize);
    let floor = (prefix as isize) - adjust as isize;
    while i >= floor && j >= floor {
        let ca = if (i as usize) < a.len() {
            a[i as usize]
        } else {
            0
        };
        let cb = if (j as usize) < b.len() {
            b[j as usize]
        } else {
            0
        };
        if ca != cb {
            break;
        }
        if ca == b'/' {
            suffix = a.len() - i as usize;
        }
        i -= 1;
        j -= 1;
    }
    let a_mid = a.len().saturating_sub(prefix + suffix);
    let b_mid = b.len().saturating_sub(prefix + suffix);
    let mut out = Vec::with_capacity(a.len() + b.len() + 7);
    if prefix + suffix > 0 {
        out.extend_from_slice(&a[..prefix]);
        out.push(b'{');
    }
    out.extend_from_slice(&a[prefix..prefix + a_mid]);
    out.extend_from_slice(b" => ");
    out.extend_from_slice(&b[prefix..prefix + b_mid]);
    if prefix + suffix > 0 {
        out.push(b'}');
        out.extend_from_slice(&a[a.len() - suffix..]);
    }
    out
}

fn decimal_width(n: usize) -> i64 {
    n.to_string().len() as i64
}

fn scale_linear(it: usize, width: i64, max_change: usize) -> usize {
    if it == 0 {
        return 0;
    }
    1 + (it as i64 * (width - 1) / max_change as i64) as usize
}

/// Sizes (old, new) of a binary file, as the stat's `Bin old -> new bytes`.
fn binary_sizes(f: &FileDiff) -> Option<(u64, u64)> {
    use super::Content;
    let sizes = |c: &Content| match c {
        Content::Binary { old_size, new_size } => Some((*old_size, *new_size)),
        Content::BinaryUnchanged { .. } => Some((0, 0)),
        _ => None,
    };
    match &f.content {
        Content::Replaced { old, new } if f.is_binary() => {
            let o = sizes(old).map_or(0, |s| s.0);
            let n = sizes(new).map_or(0, |s| s.1);
            Some((o, n))
        }
        c => sizes(c),
    }
}

/// The `--stat` block for `width` columns, with its ` N files changed, …` line.
pub fn write_stat(out: &mut Vec<u8>, diff: &TreeDiff, width: i64) {
    let names: Vec<Vec<u8>> = diff.files.iter().map(stat_name).collect();
    let max_len = names.iter().map(|n| n.len() as i64).max().unwrap_or(0);
    let mut max_change = 0;
    let mut bin_width = 0;
    let mut number_width = 0;
    for f in &diff.files {
        if let Some((old, new)) = binary_sizes(f) {
            bin_width =
                bin_width.max(14 + decimal_width(new as usize) + decimal_width(old as usize));
            number_width = 3;
        } else {
            max_change = max_change.max(f.insertions + f.deletions);
        }
    }
    number_width = number_width.max(decimal_width(max_change));
    let width = width.max(16 + 6 + number_width);
    let mut graph_width = if max_change as i64 + 4 > bin_width {
        max_change as i64
    } else {
        bin_width - 4
    };
    let mut name_width = max_len;
    if name_width + number_width + 6 + graph_width > width {
        if graph_width > width * 3 / 8 - number_width - 6 {
            graph_width = (width * 3 / 8 - number_width - 6).max(6);
        }
        if name_width > width - number_width - 6 - graph_width {
            name_width = width - number_width - 6 - graph_width;
        } else {
            graph_width = width - number_width - 6 - name_width;
        }
    }
    let nw = number_width as usize;
    for (f, name) in diff.files.iter().zip(&names) {
        let mut shown: &[u8] = name;
        let mut prefix: &[u8] = b"";
        let mut len = name_width;
        if name_width < name.len() as i64 {
            prefix = b"...";
            len = (len - 3).max(0);
            shown = &name[name.len() - (len as usize).min(name.len())..];
            if let Some(slash) = shown.iter().position(|&b| b == b'/') {
                shown = &shown[slash..];
            }
        }
        let padding = (len - shown.len() as i64).max(0) as usize;
        out.push(b' ');
        out.extend_from_slice(prefix);
        out.extend_from_slice(shown);
        out.extend(std::iter::repeat_n(b' ', padding));
        if let Some((old, new)) = binary_sizes(f) {
            out.extend_from_slice(format!(" | {:>nw$}", "Bin").as_bytes());
            if old == 0 && new == 0 {
                out.push(b'\n');
            } else {
                out.extend_from_slice(format!(" {old} -> {new} bytes\n").as_bytes());
            }
            continue;
        }
        let (mut add, mut del) = (f.insertions, f.deletions);
        let total = add + del;
        if graph_width <= max_change as i64 {
            let mut scaled = scale_linear(total, graph_width, max_change);
            if scaled < 2 && add > 0 && del > 0 {
                scaled = 2;
            }
            if add < del {
                add = scale_linear(add, graph_width, max_change);
                del = scaled - add;
            } else {
                del = scale_linear(del, graph_width, max_change);
                add = scaled - del;
            }
        }
        let space = if total > 0 { " " } else { "" };
        out.extend_from_slice(format!(" | {total:>nw$}{space}").as_bytes());
        out.extend(std::iter::repeat_n(b'+', add));
        out.extend(std::iter::repeat_n(b'-', del));
        out.push(b'\n');
    }
    write_totals(out, diff);
}

/// ` 2 files changed, 3 insertions(+), 1 deletion(-)` with git's omissions.
fn write_totals(out: &mut Vec<u8>, diff: &TreeDiff) {
    let files = diff.files.len();
    if files == 0 {
        out.extend_from_slice(b" 0 files changed\n");
        return;
    }
    let (ins, del) = (diff.insertions(), diff.deletions());
    let mut line = if files == 1 {
        " 1 file changed".to_string()
    } else {
        format!(" {files} files changed")
    };
    if ins > 0 || del == 0 {
        let s = if ins == 1 { "" } else { "s" };
        line.push_str(&format!(", {ins} insertion{s}(+)"));
    }
    if del > 0 || ins == 0 {
        let s = if del == 1 { "" } else { "s" };
        line.push_str(&format!(", {del} deletion{s}(-)"));
    }
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
}

/// The `--summary` lines: creations, deletions, renames and mode changes.
pub fn write_summary(out: &mut Vec<u8>, diff: &TreeDiff) {
    for f in &diff.files {
        match f.status {
            Status::Added => {
                out.extend_from_slice(format!(" create mode {:06o} ", f.new_mode()).as_bytes());
                out.extend_from_slice(&quoted(f.new_path()));
                out.push(b'\n');
            }
            Status::Deleted => {
                out.extend_from_slice(format!(" delete mode {:06o} ", f.old_mode()).as_bytes());
                out.extend_from_slice(&quoted(f.old_path()));
                out.push(b'\n');
            }
            Status::Renamed | Status::Copied => {
                let word = if f.status == Status::Renamed {
                    "rename"
                } else {
                    "copy"
                };
                out.extend_from_slice(format!(" {word} ").as_bytes());
                out.extend_from_slice(&rename_name(f.old_path(), f.new_path()));
                out.extend_from_slice(format!(" ({}%)\n", f.similarity).as_bytes());
                mode_change(out, f, false);
            }
            _ => mode_change(out, f, true),
        }
    }
}

fn mode_change(out: &mut Vec<u8>, f: &FileDiff, with_name: bool) {
    if f.old_mode() == f.new_mode() {
        return;
    }
    out.extend_from_slice(
        format!(" mode change {:06o} => {:06o}", f.old_mode(), f.new_mode()).as_bytes(),
    );
    if with_name {
        out.push(b' ');
        out.extend_from_slice(&quoted(f.new_path()));
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::rename_name;

    #[test]
    fn renames_factor_out_common_directories() {
        assert_eq!(rename_name(b"a.txt", b"b.txt"), b"a.txt => b.txt");
        assert_eq!(rename_name(b"d/a/x.c", b"d/b/x.c"), b"d/{a => b}/x.c");
        assert_eq!(rename_name(b"d/x.c", b"d/y.c"), b"d/{x.c => y.c}");
        assert_eq!(rename_name(b"a/x", b"x"), b"a/x => x");
    }
}
