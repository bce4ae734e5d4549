//! Path templates: a request's path with its ids and high-entropy segments collapsed, so that
//! what is kept names the endpoint, never a value. Paths carry secrets too (a webhook URL's
//! last segments are its key), so anything that does not look like a word is collapsed.

use std::borrow::Cow;

/// Most segments kept; a longer path ends in `/…`.
const MAX_SEGMENTS: usize = 32;
/// The placeholder of an id: a number, a UUID, a hex string, a Notion id, a mixed id.
const ID: &str = "{id}";
/// The placeholder of any other segment that is not a word: a token, a key, an email address,
/// anything percent-encoded.
const TOKEN: &str = "{token}";

/// The template of a request path: the query and fragment dropped, empty segments dropped
/// (`//` and a trailing `/`), and each segment kept only when it looks like a word; otherwise
/// `{id}` or `{token}`:
///
/// - `{id}`: digits; a UUID; hex of at least 8 characters with a digit (Notion's 32-hex ids,
///   commit hashes, MongoDB ids); a slug ending in a Notion id (`Page-668d…136`);
/// - `{token}`: more than 64 characters; a character other than ASCII letters, digits and
///   `-._~` (`%`, `@`, `:`, `=`, `+`); at least 24 letters and digits with no separator; at
///   least 16 characters mixing upper case, lower case and a digit (`cus_NffrFeUfNV2Hib`);
/// - `{id}` again for what is left with at least 6 characters of which 3 or more are digits
///   (`C024BE91L`, dates).
///
/// At most 32 segments are kept. The template of a template is itself.
///
/// ```
/// use hintaudit_core::path_template;
/// assert_eq!(path_template("/repos/octocat/Hello-World/issues/1347?per_page=5"),
///            "/repos/octocat/Hello-World/issues/{id}");
/// assert_eq!(path_template("/services/T0123ABCD/B0123ABCD/gHh3kEJXyQmQ2v4mRk9tYzQa"),
///            "/services/{id}/{id}/{token}");
/// ```
pub fn path_template(path: &str) -> String {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    if path == "*" {
        // `OPTIONS *`: the server as a whole.
        return "*".to_owned();
    }
    let mut out = String::with_capacity(path.len().min(256));
    for (i, s) in path.split('/').filter(|s| !s.is_empty()).enumerate() {
        if i == MAX_SEGMENTS {
            out.push_str("/…");
            break;
        }
        out.push('/');
        out.push_str(&segment(s));
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// One segment as the template keeps it.
fn segment(s: &str) -> Cow<'_, str> {
    if s == ID || s == TOKEN {
        return Cow::Borrowed(s);
    }
    if s.len() > 64 {
        return Cow::Borrowed(TOKEN);
    }
    if is_id(s) {
        return Cow::Borrowed(ID);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        || high_entropy(s)
    {
        return Cow::Borrowed(TOKEN);
    }
    if s.len() >= 6 && s.bytes().filter(u8::is_ascii_digit).count() >= 3 {
        // A mixed id: `C024BE91L`, a date.
        return Cow::Borrowed(ID);
    }
    Cow::Borrowed(s)
}

/// Digits, a UUID, long hex with a digit, or a slug ending in a Notion id.
fn is_id(s: &str) -> bool {
    let hex = |t: &str| t.bytes().all(|b| b.is_ascii_hexdigit());
    s.bytes().all(|b| b.is_ascii_digit())
        || is_uuid(s)
        || (s.len() >= 8 && s.bytes().any(|b| b.is_ascii_digit()) && hex(s))
        || s.rsplit_once('-')
            .is_some_and(|(_, t)| t.len() == 32 && hex(t))
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A long run of letters and digits with no separator, or one that mixes cases and digits.
fn high_entropy(s: &str) -> bool {
    let separated = s.bytes().any(|b| b"-._~".contains(&b));
    let upper = s.bytes().any(|b| b.is_ascii_uppercase());
    let lower = s.bytes().any(|b| b.is_ascii_lowercase());
    let digit = s.bytes().any(|b| b.is_ascii_digit());
    (!separated && s.len() >= 24) || (s.len() >= 16 && upper && lower && digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per path: its template.
    #[test]
    fn templates() {
        let long: String = "/a".repeat(40);
        let kept: String = "/a".repeat(32) + "/…";
        for (path, want) in [
            ("", "/"),
            ("/", "/"),
            ("*", "*"),
            ("/v1/search", "/v1/search"),
            ("/v1/search/", "/v1/search"),
            ("//v1//users", "/v1/users"),
            ("/v1/users?page=2&token=s3cret", "/v1/users"),
            ("/a#frag", "/a"),
            ("/api/conversations.history", "/api/conversations.history"),
            ("/oauth2/token", "/oauth2/token"),
            (
                "/repos/octocat/Hello-World/issues/1347/comments",
                "/repos/octocat/Hello-World/issues/{id}/comments",
            ),
            (
                "/v1/blocks/c02fc1d3-db8b-45c5-a222-27595b15aea7/children",
                "/v1/blocks/{id}/children",
            ),
            (
                "/v1/databases/668d797c76fa49349b05ad288df2d136/query",
                "/v1/databases/{id}/query",
            ),
            ("/My-Page-668d797c76fa49349b05ad288df2d136", "/{id}"),
            (
                "/commits/9fceb02d0ae598e95dc970b74767f19372d61af8",
                "/commits/{id}",
            ),
            ("/v1/customers/cus_NffrFeUfNV2Hib", "/v1/customers/{token}"),
            (
                "/v1/payment_intents/pi_3MtwBwLkdIwHu7ix28a3tqPa",
                "/v1/payment_intents/{token}",
            ),
            ("/channels/C024BE91L", "/channels/{id}"),
            ("/reports/2024-01-31", "/reports/{id}"),
            (
                "/services/T0123ABCD/B0123ABCD/gHh3kEJXyQmQ2v4mRk9tYzQa",
                "/services/{id}/{id}/{token}",
            ),
            ("/hooks/XXXXXXXXXXXXXXXXXXXXXXXX", "/hooks/{token}"),
            ("/users/alice@example.com", "/users/{token}"),
            ("/files/my%20file.txt", "/files/{token}"),
            (
                "/bot123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11/sendMessage",
                "/{token}/sendMessage",
            ),
            ("/v1/a/{id}/b/{token}", "/v1/a/{id}/b/{token}"),
            ("/x/{other}", "/x/{token}"),
            (&long, &kept),
        ] {
            let t = path_template(path);
            assert_eq!(t, want, "{path}");
            assert_eq!(path_template(&t), t, "the template of {path}'s template");
        }
    }

    #[test]
    fn segments_longer_than_64_are_tokens() {
        let path = format!("/a/{}", "b".repeat(65));
        assert_eq!(path_template(&path), "/a/{token}");
    }
}
