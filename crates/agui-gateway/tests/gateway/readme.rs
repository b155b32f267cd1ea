//! The README and its reference in `docs/` say what the gateway does:
//! every ```console block's `$ curl …`, in the README and in the docs the
//! reference moved to, runs against `agui-gateway demo` and its output is
//! compared with the block. Random run prefixes in ids, the run key in
//! event ids and timestamps are normalised; a `...` line stands for any
//! number of lines. The reference names every error code and every flag.

use std::process::Command;

use crate::support::{gateway, repo_root};

/// The files whose console blocks run, in this order against one demo
/// gateway (a later example may continue a thread an earlier one started).
const WITH_EXAMPLES: [&str; 6] = [
    "README.md",
    "docs/routes.md",
    "docs/configuration.md",
    "docs/security.md",
    "docs/deploy.md",
    "docs/tests.md",
];

/// Where the error codes have their table, and where the flags their rows.
const ERROR_CODES: &str = "docs/routes.md";
const FLAGS: &str = "docs/configuration.md";

fn read(file: &str) -> String {
    std::fs::read_to_string(repo_root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

struct Example {
    file: &'static str,
    command: String,
    expected: Vec<String>,
}

fn console_examples(file: &'static str, text: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line != "```console" {
            continue;
        }
        let mut block: Vec<String> = lines
            .by_ref()
            .take_while(|l| *l != "```")
            .map(str::to_owned)
            .collect();
        let command = block.remove(0);
        let command = command
            .strip_prefix("$ ")
            .expect("a console block starts with `$ `")
            .to_owned();
        examples.push(Example {
            file,
            command,
            expected: block,
        });
    }
    examples
}

/// Replaces what differs between runs: `"timestamp":<ms>` and the random
/// per-run prefix in minted ids (`msg-<12 hex>-4`).
fn normalise(line: &str) -> String {
    // An event id names its run with a random key: `id: <16 hex>.<n>`.
    if let Some((key, n)) = line.strip_prefix("id: ").and_then(|id| id.split_once('.'))
        && key.len() == 16
        && key.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return format!("id: RUN.{n}");
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("\"timestamp\":") {
        out.push_str(&rest[..at + 12]);
        rest = rest[at + 12..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('0');
    }
    out.push_str(rest);
    let bytes = out.as_bytes();
    let mut result = String::with_capacity(out.len());
    let mut i = 0;
    while i < bytes.len() {
        let run = &bytes[i..];
        let tag = |at: usize| {
            run.len() >= at + 12
                && run[at..at + 12]
                    .iter()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        };
        let is_prefix = run.len() >= 14 && run[0] == b'-' && run[13] == b'-' && tag(1);
        // A tool-call id tagged per run: `call-weather~3f0a…`.
        let is_call_tag = run.len() >= 14 && run[0] == b'~' && tag(1) && run[13] == b'"';
        if is_prefix {
            result.push_str("-RUN-");
            i += 14;
        } else if is_call_tag {
            result.push_str("~RUN");
            i += 13;
        } else {
            let ch = out[i..].chars().next().unwrap_or('?');
            result.push(ch);
            i += ch.len_utf8();
        }
    }
    result
}

/// Line-wise match where an expected `...` matches any run of lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            actual.first().is_some_and(|a| a == first) && matches(rest, &actual[1..])
        }
    }
}

#[test]
#[ignore = "tier 2: curl"]
fn the_readme_and_docs_examples_print_what_they_show() {
    let mut examples = Vec::new();
    for file in WITH_EXAMPLES {
        examples.extend(console_examples(file, &read(file)));
    }
    // The README keeps the tour; the rest of the ten it had moved to the docs.
    let in_readme = examples.iter().filter(|e| e.file == "README.md").count();
    assert!(in_readme >= 6, "the README lost its tour's examples");
    assert!(examples.len() >= 10, "the README and docs lost examples");
    let demo = gateway(&["demo", "--delay-ms", "0"]);
    let port = demo.port.to_string();
    for example in &examples {
        let command = example
            .command
            .replace("localhost:8080", &format!("localhost:{port}"));
        let output = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .output()
            .expect("sh runs");
        let stdout = String::from_utf8_lossy(&output.stdout)
            .replace(&format!("localhost:{port}"), "localhost:8080");
        let actual: Vec<String> = stdout
            .trim_end_matches('\n')
            .lines()
            .map(normalise)
            .collect();
        let expected: Vec<String> = example.expected.iter().map(|l| normalise(l)).collect();
        assert!(
            matches(&expected, &actual),
            "{} example differs:\n$ {}\n--- {}\n{}\n--- actual\n{}",
            example.file,
            example.command,
            example.file,
            expected.join("\n"),
            actual.join("\n")
        );
    }
}

#[test]
fn the_normaliser_and_matcher_do_what_they_say() {
    assert_eq!(
        normalise(r#"{"messageId":"msg-65c7ab550959-4","timestamp":1795}"#),
        r#"{"messageId":"msg-RUN-4","timestamp":0}"#
    );
    let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    assert!(matches(&lines("a\n...\nd"), &lines("a\nb\nc\nd")));
    assert!(!matches(&lines("a\n...\nd"), &lines("a\nb\nc")));
    assert!(!matches(&lines("a\nb"), &lines("a\nc")));
}

/// The reference is complete: every error code the gateway writes has its
/// row in the table, with its side; every flag of every command is named.
#[test]
fn the_docs_name_every_error_code_and_every_flag() {
    let errors = read(ERROR_CODES);
    for code in a2a_agui::ErrorCode::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.side().as_str());
        assert!(errors.contains(&row), "{ERROR_CODES} has no row {row:?}");
    }
    let flags_doc = read(FLAGS);
    for command in [&[][..], &["demo"], &["convert"], &["check-config"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
            .args(command)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        let flags: Vec<&str> = help
            .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
            .filter(|word| word.starts_with("--") && word.len() > 2)
            .filter(|word| !matches!(*word, "--help" | "--version"))
            .collect();
        assert!(!flags.is_empty() || command == ["check-config"], "{help}");
        for flag in flags {
            let flag = flag.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            // Named whole: `--tls` is not named by `--tls-cert`.
            let named = flags_doc
                .match_indices(&format!("`{flag}"))
                .any(|(at, found)| {
                    flags_doc[at + found.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| !c.is_ascii_alphanumeric() && c != '-')
                });
            assert!(named, "{FLAGS} does not name {flag} ({command:?})");
        }
    }
}
