//! In-process syntax highlighting of file views when no source-filter is configured: syntect's
//! default syntaxes (pure-Rust regexes), loaded once per process, chosen by file name, extension
//! or first line (`#!/bin/sh`). The output is escaped text in `<span class="hl-…">` spans (the
//! colours are in `static/cgit.css`), every span closed at the end of its line and reopened on
//! the next, so each source line stays one line of cgit's blob table. A file over the size
//! budget is left plain; where the time budget runs out, the rest of the file is. Results are
//! kept in the fragment cache by blob id.

use super::html::escape_into;
use crate::pages::RepoCtx;
use gix::ObjectId;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};
use syntect::parsing::{
    BasicScopeStackOp, ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet,
};

/// Files larger than this are shown plain.
pub const MAX_BYTES: usize = 512 << 10;
/// A file with a line longer than this is shown plain (minified code).
pub const MAX_LINE: usize = 4096;
/// Highlighting stops after this long; the rest of the file is shown plain.
pub const TIME_BUDGET: Duration = Duration::from_millis(200);
/// Lines and bytes highlighted before the time budget is looked at (whichever comes first),
/// so that a small file is highlighted whatever the load (the first use of a syntax compiles
/// its regexes, which can take 100 ms).
pub const LINES_ALWAYS: usize = 200;
pub const BYTES_ALWAYS: usize = 16 << 10;

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// What highlighting a text gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Highlighted {
    Whole(String),
    /// Highlighted up to where the time ran out (or the syntax failed), the rest escaped.
    Cut(String),
    /// Over the size or line length budget: nothing was done.
    TooLarge,
}

/// The syntax for a file `name` (its last path component) whose text starts with
/// `first_line`; `None` for plain text.
pub fn syntax_for(name: &str, first_line: &str) -> Option<&'static SyntaxReference> {
    let set = &*SYNTAXES;
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e)
        .filter(|e| !e.is_empty());
    if extension == Some("h") {
        // Objective-C and C++ claim headers too; on a git host they are mostly C's.
        return set.find_syntax_by_name("C");
    }
    set.find_syntax_by_extension(name)
        .or_else(|| extension.and_then(|e| set.find_syntax_by_extension(e)))
        .or_else(|| set.find_syntax_by_first_line(first_line))
        .filter(|s| s.name != "Plain Text")
}

/// `text` highlighted as `syntax`, unless it is too large; `deadline` is looked at before
/// every line after the first `LINES_ALWAYS` lines or `BYTES_ALWAYS` bytes.
pub fn highlight(syntax: &SyntaxReference, text: &str, deadline: Instant) -> Highlighted {
    if text.len() > MAX_BYTES || text.split('\n').any(|l| l.len() > MAX_LINE) {
        return Highlighted::TooLarge;
    }
    let mut lines = Lines::new(syntax, text.len() * 2);
    let mut done = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if (n >= LINES_ALWAYS || done >= BYTES_ALWAYS) && Instant::now() > deadline {
            break;
        }
        let ends = line.ends_with('\n');
        let with_newline;
        let whole_line = if ends {
            line
        } else {
            // The syntaxes expect every line to end with a newline.
            with_newline = format!("{line}\n");
            with_newline.as_str()
        };
        let before = lines.out.len();
        if lines.push(whole_line, ends).is_err() {
            lines.out.truncate(before);
            break;
        }
        done += line.len();
    }
    if done == text.len() {
        return Highlighted::Whole(lines.out);
    }
    escape_into(&mut lines.out, &text[done..]);
    Highlighted::Cut(lines.out)
}

/// The parser's state between lines and the HTML so far.
struct Lines {
    state: ParseState,
    stack: ScopeStack,
    /// Beside each scope on the stack, the class of its span when it has one.
    spans: Vec<Option<Rc<str>>>,
    classes: HashMap<Scope, Option<Rc<str>>>,
    /// The syntax's own atom (`c` of `source.c`), left out of classes.
    language: String,
    out: String,
}

impl Lines {
    fn new(syntax: &SyntaxReference, capacity: usize) -> Lines {
        let top = syntax.scope.build_string();
        Lines {
            state: ParseState::new(syntax),
            stack: ScopeStack::new(),
            spans: Vec::new(),
            classes: HashMap::new(),
            language: top.rsplit('.').next().unwrap_or_default().to_string(),
            out: String::with_capacity(capacity),
        }
    }

    /// One line (ending with `\n`): the spans open at its start are reopened, the ones open
    /// at its end closed before the newline, which is kept only when `newline`.
    fn push(&mut self, line: &str, newline: bool) -> Result<(), syntect::Error> {
        let ops = self.state.parse_line(line, &SYNTAXES)?;
        let text = line.strip_suffix('\n').unwrap_or(line);
        let Lines {
            stack,
            spans,
            classes,
            language,
            out,
            ..
        } = self;
        for class in spans.iter().flatten() {
            open(out, class);
        }
        let mut done = 0;
        for (at, op) in &ops {
            let at = (*at).min(text.len());
            if at > done {
                escape_into(out, &text[done..at]);
                done = at;
            }
            stack.apply_with_hook(op, |op, _| match op {
                BasicScopeStackOp::Push(scope) => {
                    let class = classes
                        .entry(scope)
                        .or_insert_with(|| class_of(scope, language))
                        .clone();
                    if let Some(class) = &class {
                        open(out, class);
                    }
                    spans.push(class);
                }
                BasicScopeStackOp::Pop => {
                    if let Some(Some(_)) = spans.pop() {
                        out.push_str("</span>");
                    }
                }
            })?;
        }
        escape_into(out, &text[done..]);
        for _ in spans.iter().flatten() {
            out.push_str("</span>");
        }
        if newline {
            out.push('\n');
        }
        Ok(())
    }
}

fn open(out: &mut String, class: &str) {
    out.push_str("<span class=\"");
    out.push_str(class);
    out.push_str("\">");
}

/// The class of a scope's span, `None` for scopes that get none (the file's own, `meta`
/// groupings, punctuation, operators, plain identifiers): `comment.line.double-slash.c` →
/// `hl-comment hl-line hl-double-slash`.
fn class_of(scope: Scope, language: &str) -> Option<Rc<str>> {
    let name = scope.build_string();
    let mut atoms: Vec<&str> = name.split('.').collect();
    let shown = match atoms.as_slice() {
        ["keyword", "operator", ..] | ["variable", "other", ..] => false,
        ["meta", "preprocessor" | "diff", ..] => true,
        [first, ..] => SHOWN.contains(first),
        [] => false,
    };
    if atoms.len() > 1 && atoms.last() == Some(&language) {
        atoms.pop();
    }
    shown.then(|| {
        let classes: Vec<String> = atoms.iter().map(|a| format!("hl-{a}")).collect();
        classes.join(" ").into()
    })
}

/// The first scope atoms that get a span (TextMate's standard scope names).
const SHOWN: &[&str] = &[
    "comment", "constant", "entity", "keyword", "markup", "storage", "string", "support",
    "variable",
];

/// Highlighted HTML of blob `id` shown as `name` (`text` is what is shown of it), from the
/// fragment cache when it is there; `None` when the file is plain text or too large.
pub fn cached_html(ctx: &RepoCtx<'_>, id: ObjectId, name: &str, text: &str) -> Option<Arc<str>> {
    let syntax = syntax_for(name, text.lines().next().unwrap_or_default())?;
    let stats = &ctx.site.highlights;
    if text.len() > MAX_BYTES {
        stats.over_budget.inc();
        return None;
    }
    let key = format!("hl:{id}:{}:{}", text.len(), syntax.name);
    let html = ctx.site.fragments.get_or_render(&key, || {
        stats.runs.inc();
        Ok::<_, std::convert::Infallible>(
            match highlight(syntax, text, Instant::now() + TIME_BUDGET) {
                Highlighted::Whole(html) => html,
                Highlighted::Cut(html) => {
                    stats.over_budget.inc();
                    html
                }
                // Kept as "plain" (empty): long lines are found again cheaply, but the
                // page is kept all the same.
                Highlighted::TooLarge => {
                    stats.over_budget.inc();
                    String::new()
                }
            },
        )
    });
    html.ok().filter(|h| !h.is_empty())
}

/// How often files were highlighted (cache hits do not count) and how often a file was over
/// the budget: too large, or cut where the time ran out (metrics).
#[derive(Default, Debug, Clone)]
pub struct HighlightStats {
    pub runs: prometheus_client::metrics::counter::Counter,
    pub over_budget: prometheus_client::metrics::counter::Counter,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHELL: &str = "Bourne Again Shell (bash)";

    fn html(name: &str, text: &str) -> String {
        let syntax = syntax_for(name, text.lines().next().unwrap_or_default()).unwrap();
        match highlight(syntax, text, Instant::now() + Duration::from_secs(60)) {
            Highlighted::Whole(html) => html,
            other => panic!("not whole: {other:?}"),
        }
    }

    /// The text with its tags removed and its entities decoded.
    fn text_of(html: &str) -> String {
        crate::pages::parts::html::strip_tags(html)
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#x27;", "'")
            .replace("&amp;", "&")
    }

    #[test]
    fn spans_close_at_every_line_end() {
        let text = "/* a comment\n   over two lines */\nint x = 1;\nchar *s = \"<&>\";";
        let out = html("x.c", text);
        assert_eq!(out.lines().count(), 4);
        for line in out.lines() {
            assert_eq!(
                line.matches("<span").count(),
                line.matches("</span>").count(),
                "unbalanced: {line}"
            );
        }
        // The comment's second line is still a comment.
        assert!(out.lines().nth(1).unwrap().contains("hl-comment"));
        assert_eq!(text_of(&out), text);
        assert!(out.contains("&lt;&amp;&gt;"));
        assert!(!out.ends_with('\n'));
    }

    #[test]
    fn syntax_by_name_extension_and_first_line() {
        assert_eq!(syntax_for("main.rs", "").unwrap().name, "Rust");
        assert_eq!(syntax_for("Makefile", "").unwrap().name, "Makefile");
        assert_eq!(syntax_for("run", "#!/bin/sh").unwrap().name, SHELL);
        assert_eq!(syntax_for("x.h", "").unwrap().name, "C");
        assert!(syntax_for("README", "hello").is_none());
        assert!(syntax_for("notes.txt", "hello").is_none());
    }

    #[test]
    fn too_large_texts_are_refused() {
        let c = syntax_for("x.c", "").unwrap();
        let later = Instant::now() + Duration::from_secs(60);
        let big = "int x;\n".repeat(MAX_BYTES / 7 + 1);
        assert_eq!(highlight(c, &big, later), Highlighted::TooLarge);
        let long = format!("int x = {};\n", "1+".repeat(MAX_LINE));
        assert_eq!(highlight(c, &long, later), Highlighted::TooLarge);
    }

    #[test]
    fn past_the_deadline_the_rest_is_plain() {
        let c = syntax_for("x.c", "").unwrap();
        let text = "int x; /* <&> */\n".repeat(LINES_ALWAYS + 5);
        let past = Instant::now() - Duration::from_millis(1);
        let Highlighted::Cut(html) = highlight(c, &text, past) else {
            panic!("not cut");
        };
        let lines: Vec<&str> = html.lines().collect();
        assert_eq!(lines.len(), LINES_ALWAYS + 5);
        assert!(lines[LINES_ALWAYS - 1].contains("<span"));
        assert_eq!(lines[LINES_ALWAYS], "int x; /* &lt;&amp;&gt; */");
        assert_eq!(text_of(&html), text);
        // Long lines: the deadline is looked at after BYTES_ALWAYS.
        let line = format!("int x; /* {} */\n", "y".repeat(190));
        let text = line.repeat(100);
        let Highlighted::Cut(html) = highlight(c, &text, past) else {
            panic!("not cut");
        };
        let coloured = html.lines().filter(|l| l.contains("<span")).count();
        assert_eq!(coloured, BYTES_ALWAYS.div_ceil(line.len()));
    }
}
