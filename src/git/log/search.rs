//! Searches as cgit asks git for them: a field and a POSIX basic regular expression.

use crate::git::commit::{CommitInfo, Person};

/// What a search looks at (cgit's `qt=grep|author|committer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Any line of the message.
    Message,
    /// `Name <email>` of the author.
    Author,
    /// `Name <email>` of the committer.
    Committer,
}

/// A search as cgit asks git for it (`--grep`/`--author`/`--committer` with
/// `--regexp-ignore-case`): a POSIX basic regular expression, case-insensitive, `^` and `$`
/// anchoring lines.
#[derive(Clone, Debug)]
pub struct Filter {
    field: Field,
    pattern: regex::Regex,
}

impl Filter {
    /// The search, or why the pattern cannot be searched for (invalid, or a back-reference,
    /// which the regex engine does not do).
    pub fn new(field: Field, pattern: &str) -> Result<Filter, String> {
        let invalid = || format!("Invalid search pattern: {pattern}");
        let translated = basic_to_regex(pattern).ok_or_else(invalid)?;
        let pattern = regex::RegexBuilder::new(&translated)
            .case_insensitive(true)
            .multi_line(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|_| invalid())?;
        Ok(Filter { field, pattern })
    }

    /// Whether the commit is one the search finds.
    pub fn matches(&self, c: &CommitInfo) -> bool {
        let person = |p: &Person| self.pattern.is_match(&format!("{} <{}>", p.name, p.email));
        match self.field {
            Field::Message => self.pattern.is_match(&c.message),
            Field::Author => person(&c.author),
            Field::Committer => person(&c.committer),
        }
    }
}

/// A POSIX basic regular expression (with GNU's `\+ \? \|` and `\< \>`) in the `regex`
/// crate's syntax; `None` for what it cannot express (back-references).
fn basic_to_regex(basic: &str) -> Option<String> {
    let mut out = String::with_capacity(basic.len() + 8);
    let mut chars = basic.chars().peekable();
    // Where a `*` is literal: at the start, after `^` or after an opening group.
    let mut at_start = true;
    while let Some(c) = chars.next() {
        let starting = at_start;
        at_start = false;
        match c {
            '\\' => match chars.next()? {
                g @ ('(' | '|') => {
                    out.push(g);
                    at_start = true;
                }
                g @ (')' | '{' | '}' | '+' | '?') => out.push(g),
                '<' | '>' => out.push_str("\\b"),
                d if d.is_ascii_digit() => return None,
                e if e.is_ascii_alphanumeric() => {
                    out.push('\\');
                    out.push(e);
                }
                other => out.push_str(&regex::escape(&other.to_string())),
            },
            '*' if starting => out.push_str("\\*"),
            '^' => {
                out.push('^');
                at_start = true;
            }
            '[' => copy_bracket(&mut chars, &mut out)?,
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Copies a bracket expression (after its `[`): a `]` right at its start is a member, and a
/// backslash is a plain character, as POSIX has it.
fn copy_bracket(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
) -> Option<()> {
    out.push('[');
    if chars.peek() == Some(&'^') {
        out.push(chars.next()?);
    }
    let mut first = true;
    loop {
        let c = chars.next()?;
        match c {
            ']' if !first => break,
            '[' if chars.peek() == Some(&':') => {
                out.push('[');
                for class_char in chars.by_ref() {
                    out.push(class_char);
                    if class_char == ']' {
                        break;
                    }
                }
            }
            '\\' | '[' | ']' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
        first = false;
    }
    out.push(']');
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_ignore_case() {
        let person = |name: &str| Person {
            name: name.into(),
            email: "x@example.com".into(),
            time: gix::date::Time::default(),
        };
        let c = CommitInfo {
            id: gix::ObjectId::null(gix::hash::Kind::Sha1),
            tree: gix::ObjectId::null(gix::hash::Kind::Sha1),
            parents: Vec::new(),
            author: person("Ada Lovelace"),
            committer: person("Bob"),
            subject: "Fix Parser".into(),
            message: "Fix Parser\n\nDetails".into(),
        };
        let matches = |field, pattern| Filter::new(field, pattern).unwrap().matches(&c);
        assert!(matches(Field::Message, "details"));
        assert!(matches(Field::Author, "LOVELACE"));
        assert!(matches(Field::Author, "EXAMPLE.com"));
        assert!(!matches(Field::Committer, "ada"));
        // git's basic regular expressions
        assert!(matches(Field::Message, "^fix.*parser$"));
        assert!(matches(Field::Message, "^details"));
        assert!(!matches(Field::Message, "parser("));
        assert!(matches(Field::Message, "p[a-z]rs\\(er\\|ing\\)"));
        assert!(matches(Field::Author, "\\<ada\\>"));
        assert!(!matches(Field::Author, "\\<lace"));
        // what cannot be searched for is said
        assert!(Filter::new(Field::Message, "\\(a\\)\\1").is_err());
        assert!(Filter::new(Field::Message, "[unclosed").is_err());
        assert!(Filter::new(Field::Message, "a\\{99999\\}").is_err());
    }

    #[test]
    fn basic_regular_expressions_translate() {
        let cases = [
            ("a+b?", Some("a\\+b\\?")),
            ("a\\+b\\?", Some("a+b?")),
            ("*star", Some("\\*star")),
            ("^*", Some("^\\*")),
            ("x*", Some("x*")),
            ("\\(a\\|b\\)*", Some("(a|b)*")),
            ("[]a]", Some("[\\]a]")),
            ("[^\\]", Some("[^\\\\]")),
            ("[[:digit:]x-z]", Some("[[:digit:]x-z]")),
            ("a{2}", Some("a\\{2\\}")),
            ("a\\{2\\}", Some("a{2}")),
            ("\\(x\\)\\1", None),
            ("[unclosed", None),
        ];
        for (basic, expected) in cases {
            assert_eq!(basic_to_regex(basic).as_deref(), expected, "{basic}");
        }
    }
}
