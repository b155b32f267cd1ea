//! What the environment adds to the configuration, before it is checked:
//!
//! - Any key, as `AGUI_GATEWAY__<KEY>` with `__` between the parts of its
//!   path (`AGUI_GATEWAY__LIMITS__MAX_STREAMS=100`,
//!   `AGUI_GATEWAY__AGENTS__WEATHER__UPSTREAM=http://…`). The value is read
//!   as a TOML value (`100`, `true`, `["a", "b"]`, `"quoted"`), or as a
//!   string when it is not one. A variable wins over the file.
//! - `${NAME}` and `${file:PATH}` in any string value: an environment
//!   variable or a file's content (a trailing newline dropped), so secrets
//!   stay out of the file. `$${` writes `${`.
//!
//! Errors point where the value came from: the file's line, or the
//! variable (values set by variables carry spans past the file's end,
//! one per variable).

use std::borrow::Cow;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The prefix of the variables that set keys.
pub const PREFIX: &str = "AGUI_GATEWAY__";

/// A file referenced by `${file:…}` larger than this is refused: it is a
/// secret, not a document.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// What the environment holds for a configuration: the variables that set
/// keys (sorted by name) and a way to read any variable.
pub struct Environment {
    overrides: Vec<(String, String)>,
    /// Every variable, for `${NAME}`.
    all: Vec<(String, String)>,
}

impl Environment {
    /// The process's environment.
    pub fn of_process() -> Environment {
        // `vars()` would panic on a variable that is not UTF-8: skipped.
        Environment::from_pairs(std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        }))
    }

    /// A given environment (tests).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Environment {
        let all: Vec<(String, String)> = pairs.into_iter().collect();
        let mut overrides: Vec<(String, String)> = all
            .iter()
            .filter(|(name, _)| name.starts_with(PREFIX) && name.len() > PREFIX.len())
            .cloned()
            .collect();
        overrides.sort();
        Environment { overrides, all }
    }

    fn lookup(&self, name: &str) -> Option<String> {
        self.all
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    }

    /// Whether any variable sets a key (a configuration may come from the
    /// environment alone).
    pub fn sets_keys(&self) -> bool {
        !self.overrides.is_empty()
    }

    /// The variable an error at `offset` is about, when it is past the
    /// file's text (`text_len`).
    pub fn variable_at(&self, text_len: usize, offset: usize) -> Option<&str> {
        let index = offset.checked_sub(text_len + 1)?;
        self.overrides.get(index).map(|(name, _)| name.as_str())
    }

    /// Sets the keys the variables name in `root`, then expands the
    /// references in every string. An error carries the span it is about.
    pub fn apply<'i>(
        &'i self,
        root: &mut DeTable<'i>,
        text_len: usize,
    ) -> Result<(), (Range<usize>, String)> {
        for (index, (name, value)) in self.overrides.iter().enumerate() {
            let at = text_len + 1 + index;
            let span = at..at + 1;
            let path: Vec<String> = name[PREFIX.len()..]
                .split("__")
                .map(str::to_ascii_lowercase)
                .collect();
            if path.iter().any(String::is_empty) {
                return Err((span, "an empty key between '__'".to_owned()));
            }
            let parsed = match DeValue::parse(value) {
                Ok(parsed) => parsed.into_inner(),
                Err(_) => DeValue::String(Cow::Borrowed(value)),
            };
            set(root, &path, respan(parsed, &span), &span)?;
        }
        expand_table(root, &|name| self.lookup(name))
    }
}

/// Gives a value from a variable, and everything in it, the variable's
/// span: an error anywhere inside names the variable.
fn respan<'i>(value: DeValue<'i>, span: &Range<usize>) -> Spanned<DeValue<'i>> {
    let value = match value {
        DeValue::Array(items) => DeValue::Array(
            items
                .into_iter()
                .map(|item| respan(item.into_inner(), span))
                .collect(),
        ),
        DeValue::Table(table) => DeValue::Table(
            table
                .into_iter()
                .map(|(key, item)| {
                    (
                        Spanned::new(span.clone(), key.into_inner()),
                        respan(item.into_inner(), span),
                    )
                })
                .collect(),
        ),
        other => other,
    };
    Spanned::new(span.clone(), value)
}

/// Puts `value` at `path`, making the tables on the way.
fn set<'i>(
    table: &mut DeTable<'i>,
    path: &[String],
    value: Spanned<DeValue<'i>>,
    span: &Range<usize>,
) -> Result<(), (Range<usize>, String)> {
    let Some((last, parents)) = path.split_last() else {
        return Ok(());
    };
    let mut here = table;
    for (depth, key) in parents.iter().enumerate() {
        let entry = here
            .entry(Spanned::new(span.clone(), Cow::Owned(key.clone())))
            .or_insert_with(|| Spanned::new(span.clone(), DeValue::Table(DeTable::new())));
        let DeValue::Table(next) = entry.get_mut() else {
            let at = path[..=depth].join(".");
            return Err((span.clone(), format!("{at} is not a table")));
        };
        here = next;
    }
    here.insert(Spanned::new(span.clone(), Cow::Owned(last.clone())), value);
    Ok(())
}

fn expand_table(
    table: &mut DeTable<'_>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), (Range<usize>, String)> {
    for (_, value) in table.iter_mut() {
        expand_value(value, lookup)?;
    }
    Ok(())
}

fn expand_value(
    value: &mut Spanned<DeValue<'_>>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), (Range<usize>, String)> {
    let span = value.span();
    match value.get_mut() {
        DeValue::String(text) if text.contains("${") => {
            let expanded = expand(text, lookup).map_err(|why| (span, why))?;
            *text = Cow::Owned(expanded);
        }
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                expand_value(item, lookup)?;
            }
        }
        DeValue::Table(table) => expand_table(table, lookup)?,
        _ => {}
    }
    Ok(())
}

/// `${NAME}`, `${file:PATH}` and `$${` in one string.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            // `$${`: a literal `${`.
            out.push_str(&rest[..at - 1]);
            out.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("a '${' without its '}' (write '$${' for a literal one)".to_owned());
        };
        let reference = &after[..end];
        out.push_str(&resolve(reference, lookup)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(reference: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    if let Some(path) = reference.strip_prefix("file:") {
        use std::io::Read as _;
        let cannot = |e: std::io::Error| format!("${{file:{path}}}: cannot read: {e}");
        // Read through a bound, not by the size the file says it has (a
        // pipe or a /proc file says 0).
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .map_err(cannot)?
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "${{file:{path}}}: more than a secret's {MAX_FILE_BYTES} bytes"
            ));
        }
        let content =
            String::from_utf8(bytes).map_err(|_| format!("${{file:{path}}}: not UTF-8 text"))?;
        return Ok(content
            .strip_suffix("\r\n")
            .or_else(|| content.strip_suffix('\n'))
            .unwrap_or(&content)
            .to_owned());
    }
    let valid = !reference.is_empty()
        && reference
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid {
        return Err(format!(
            "${{{reference}}}: a reference is ${{NAME}} (letters, digits, '_') or ${{file:PATH}}"
        ));
    }
    lookup(reference)
        .ok_or_else(|| format!("${{{reference}}}: the environment variable is not set"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "t0k".to_owned())
    }

    #[test]
    fn references_expand_and_literals_stay() {
        assert_eq!(expand("Bearer ${TOKEN}", &lookup).unwrap(), "Bearer t0k");
        assert_eq!(expand("${TOKEN}${TOKEN}", &lookup).unwrap(), "t0kt0k");
        assert_eq!(expand("$${TOKEN}", &lookup).unwrap(), "${TOKEN}");
        assert_eq!(expand("a $ b {c}", &lookup).unwrap(), "a $ b {c}");
        assert!(
            expand("${MISSING}", &lookup)
                .unwrap_err()
                .contains("not set")
        );
        assert!(
            expand("${TOKEN", &lookup)
                .unwrap_err()
                .contains("without its '}'")
        );
        assert!(
            expand("${a-b}", &lookup)
                .unwrap_err()
                .contains("a reference is")
        );
        assert!(
            expand("${}", &lookup)
                .unwrap_err()
                .contains("a reference is")
        );
    }

    #[test]
    fn a_referenced_file_is_read_once_trimmed_and_bounded() {
        let dir = std::env::temp_dir().join(format!("agui-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small");
        std::fs::write(&small, "secret\r\n").unwrap();
        let text = format!("${{file:{}}}", small.display());
        assert_eq!(expand(&text, &lookup).unwrap(), "secret");
        let large = dir.join("large");
        std::fs::write(&large, vec![b'x'; 70 * 1024]).unwrap();
        let text = format!("${{file:{}}}", large.display());
        assert!(expand(&text, &lookup).unwrap_err().contains("more than"));
        // A file that says it is empty is read through the bound too.
        let endless = "${file:/dev/zero}";
        assert!(expand(endless, &lookup).unwrap_err().contains("more than"));
    }

    #[test]
    fn variables_set_nested_keys_and_name_themselves_in_errors() {
        let env = Environment::from_pairs([
            (
                "AGUI_GATEWAY__AGENTS__W__UPSTREAM".to_owned(),
                "http://127.0.0.1:1/".to_owned(),
            ),
            (
                "AGUI_GATEWAY__CORS__ALLOW_ORIGINS".to_owned(),
                "[\"https://a.example\"]".to_owned(),
            ),
            ("OTHER".to_owned(), "1".to_owned()),
        ]);
        assert!(env.sets_keys());
        let config = crate::config::Config::parse_with("-", "", &env).unwrap();
        assert_eq!(config.agents[0].name, "w");
        assert_eq!(config.cors.origins.len(), 1);
        let bad = Environment::from_pairs([
            (
                "AGUI_GATEWAY__AGENTS__W__UPSTREAM".to_owned(),
                "http://127.0.0.1:1/".to_owned(),
            ),
            (
                "AGUI_GATEWAY__CORS__ALLOW_ORIGINS".to_owned(),
                "[\"no-scheme\"]".to_owned(),
            ),
        ]);
        let err = crate::config::Config::parse_with("-", "", &bad)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("environment variable AGUI_GATEWAY__CORS__ALLOW_ORIGINS:"),
            "{err}"
        );
        let clash =
            Environment::from_pairs([("AGUI_GATEWAY__LISTEN__X".to_owned(), "1".to_owned())]);
        let err = crate::config::Config::parse_with("-", "listen = \"127.0.0.1:1\"\n", &clash)
            .unwrap_err()
            .to_string();
        assert!(err.contains("listen is not a table"), "{err}");
    }
}
