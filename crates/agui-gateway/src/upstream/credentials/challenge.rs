//! What an agent's 401 says of the token it refused: its `WWW-Authenticate`
//! challenges (RFC 9110 §11.6.1), read for RFC 6750 §3.1's
//! `error="invalid_token"` ("expired, revoked, malformed, or invalid"), the
//! one answer that names the token itself. A bare challenge, or another
//! error, says the request lacked something a new token would not bring.

use axum::http::{HeaderMap, header};

/// Whether one of the answer's challenges has `error` = `invalid_token`
/// (the parameter's name in any case, its value a token or a quoted
/// string).
pub fn says_invalid_token(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(elements)
        .filter_map(param)
        .any(|(name, value)| name.eq_ignore_ascii_case("error") && value == "invalid_token")
}

/// The comma-separated elements of a challenge list, commas inside quoted
/// strings left alone.
fn elements(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    let mut ends = Vec::new();
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                ends.push((start, at));
                start = at + 1;
            }
            _ => {}
        }
    }
    ends.push((start, text.len()));
    ends.into_iter()
        .filter_map(move |(from, to)| text.get(from..to))
}

/// An element's parameter: `name=value`, after the scheme when the
/// element starts a challenge (`Bearer error="invalid_token"`); the value
/// unquoted.
fn param(element: &str) -> Option<(&str, String)> {
    let (before, after) = element.split_once('=')?;
    let name = before.split_whitespace().last()?;
    let value = after.trim_start();
    let value = match value.strip_prefix('"') {
        Some(quoted) => {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => out.extend(chars.next()),
                    _ => out.push(c),
                }
            }
            out
        }
        None => value
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    Some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn says(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(value).unwrap(),
            );
        }
        says_invalid_token(&headers)
    }

    #[test]
    fn only_an_invalid_token_error_names_the_token() {
        assert!(says(&[r#"Bearer realm="agent", error="invalid_token""#]));
        assert!(says(&[r#"Bearer error=invalid_token"#]));
        assert!(says(&[
            r#"Bearer ERROR = "invalid_token", error_description="expired""#
        ]));
        assert!(says(&[
            r#"Basic realm="x""#,
            r#"Bearer realm="y", error="invalid_token""#
        ]));
        assert!(says(&[
            r#"Basic realm="a, b", Bearer error="invalid_token""#
        ]));
        assert!(!says(&[]));
        assert!(!says(&[r#"Bearer realm="agent""#]));
        assert!(!says(&[r#"Bearer error="insufficient_scope""#]));
        assert!(!says(&[r#"Bearer error="invalid_request""#]));
        // Inside another parameter's quoted text, it is text.
        assert!(!says(&[
            r#"Bearer error_description="error=invalid_token, or not", error="invalid_request""#
        ]));
        assert!(!says(&[r#"Bearer realm="error=\"invalid_token\"""#]));
        assert!(!says(&["Basic abc=="]));
    }
}
