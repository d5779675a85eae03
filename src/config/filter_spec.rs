//! How a filter option names its filter: `exec:PROGRAM`, `lua:SCRIPT`, or a bare program.

use std::path::Path;

/// The filter a spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterSpec<'a> {
    /// A program run directly, without a shell.
    Exec(&'a str),
    /// A script run in the embedded Lua.
    Lua(&'a Path),
}

impl<'a> FilterSpec<'a> {
    /// The filter `spec` names, or why it names none: a prefix other than `exec:` and `lua:`
    /// (cgit refuses to start with one; a single letter is a Windows drive, as in cgit).
    pub fn parse(spec: &'a str) -> Result<FilterSpec<'a>, String> {
        if let Some(script) = spec.strip_prefix("lua:") {
            return Ok(FilterSpec::Lua(Path::new(script)));
        }
        if let Some(program) = spec.strip_prefix("exec:") {
            return Ok(FilterSpec::Exec(program));
        }
        match spec.split_once(':') {
            Some((prefix, _)) if prefix.len() > 1 => {
                Err(format!("invalid filter type '{prefix}' in {spec}"))
            }
            _ => Ok(FilterSpec::Exec(spec)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_a_program_or_a_script() {
        assert_eq!(
            FilterSpec::parse("exec:/bin/x"),
            Ok(FilterSpec::Exec("/bin/x"))
        );
        assert_eq!(FilterSpec::parse("/bin/x"), Ok(FilterSpec::Exec("/bin/x")));
        assert_eq!(FilterSpec::parse("c:/x"), Ok(FilterSpec::Exec("c:/x")));
        assert_eq!(
            FilterSpec::parse("lua:/x.lua"),
            Ok(FilterSpec::Lua(Path::new("/x.lua")))
        );
        assert!(FilterSpec::parse("ldap:/x").is_err());
    }
}
