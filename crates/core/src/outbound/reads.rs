//! `read_only_requests`: requests that only read though their method says otherwise (a search
//! sent as a POST), as `METHOD HOST/PATH` patterns matched against a request's path template;
//! and the built-in ones of well-known APIs, each with the API documentation that says so
//! ([design: judging requests](../../../../docs/design.md#judging-requests)).

use std::fmt;
use std::sync::Arc;

/// The built-in read-only requests, `(pattern, source)`: each pattern with the page of the
/// API's documentation that says it reads. docs/design.md lists the same, with the same
/// sources (a test keeps them in step). GitHub's GraphQL queries need no entry: a GraphQL
/// query is a read by its operation type.
pub const BUILTIN_READ_ONLY_REQUESTS: &[(&str, &str)] = &[
    (
        "POST api.notion.com/v1/search",
        "https://developers.notion.com/reference/post-search",
    ),
    (
        "POST api.notion.com/v1/databases/*/query",
        "https://developers.notion.com/reference/post-database-query",
    ),
    (
        "POST api.notion.com/v1/data_sources/*/query",
        "https://developers.notion.com/reference/query-a-data-source",
    ),
    (
        "POST slack.com/api/auth.test",
        "https://api.slack.com/methods/auth.test",
    ),
    (
        "POST slack.com/api/conversations.history",
        "https://api.slack.com/methods/conversations.history",
    ),
    (
        "POST slack.com/api/conversations.info",
        "https://api.slack.com/methods/conversations.info",
    ),
    (
        "POST slack.com/api/conversations.list",
        "https://api.slack.com/methods/conversations.list",
    ),
    (
        "POST slack.com/api/conversations.members",
        "https://api.slack.com/methods/conversations.members",
    ),
    (
        "POST slack.com/api/conversations.replies",
        "https://api.slack.com/methods/conversations.replies",
    ),
    (
        "POST slack.com/api/files.info",
        "https://api.slack.com/methods/files.info",
    ),
    (
        "POST slack.com/api/files.list",
        "https://api.slack.com/methods/files.list",
    ),
    (
        "POST slack.com/api/reactions.get",
        "https://api.slack.com/methods/reactions.get",
    ),
    (
        "POST slack.com/api/search.all",
        "https://api.slack.com/methods/search.all",
    ),
    (
        "POST slack.com/api/search.files",
        "https://api.slack.com/methods/search.files",
    ),
    (
        "POST slack.com/api/search.messages",
        "https://api.slack.com/methods/search.messages",
    ),
    (
        "POST slack.com/api/team.info",
        "https://api.slack.com/methods/team.info",
    ),
    (
        "POST slack.com/api/users.conversations",
        "https://api.slack.com/methods/users.conversations",
    ),
    (
        "POST slack.com/api/users.info",
        "https://api.slack.com/methods/users.info",
    ),
    (
        "POST slack.com/api/users.list",
        "https://api.slack.com/methods/users.list",
    ),
    (
        "POST slack.com/api/users.lookupByEmail",
        "https://api.slack.com/methods/users.lookupByEmail",
    ),
    (
        "POST slack.com/api/users.profile.get",
        "https://api.slack.com/methods/users.profile.get",
    ),
    (
        "POST api.github.com/markdown",
        "https://docs.github.com/en/rest/markdown/markdown#render-a-markdown-document",
    ),
    (
        "POST api.github.com/markdown/raw",
        "https://docs.github.com/en/rest/markdown/markdown#render-a-markdown-document-in-raw-mode",
    ),
    (
        "POST api.exa.ai/search",
        "https://docs.exa.ai/reference/search",
    ),
    (
        "POST api.exa.ai/contents",
        "https://docs.exa.ai/reference/get-contents",
    ),
    (
        "POST api.tavily.com/search",
        "https://docs.tavily.com/documentation/api-reference/endpoint/search",
    ),
    (
        "POST api.tavily.com/extract",
        "https://docs.tavily.com/documentation/api-reference/endpoint/extract",
    ),
    (
        "POST *.algolia.net/1/indexes/*/query",
        "https://www.algolia.com/doc/rest-api/search/#tag/Search/operation/searchSingleIndex",
    ),
    (
        "POST *.algolia.net/1/indexes/*/queries",
        "https://www.algolia.com/doc/rest-api/search/#tag/Search/operation/search",
    ),
];

/// Why a `read_only_requests` pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestPatternError {
    /// Not `METHOD HOST/PATH`.
    #[error("`{0}` is not `METHOD HOST/PATH` (for example `POST api.notion.com/v1/search`)")]
    Form(String),
    /// The method is not an HTTP method token or `*`.
    #[error("`{0}`: the method must be an HTTP method (`POST`) or `*`")]
    Method(String),
    /// The host is empty, or holds a character a host cannot, or a `*` other than a leading
    /// `*.`.
    #[error(
        "`{0}`: the host must be a name (`api.notion.com`) or `*.` and a suffix (`*.algolia.net`)"
    )]
    Host(String),
    /// `**` before the last segment.
    #[error("`{0}`: `**` may only end the path")]
    DoubleStar(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Exact(String),
    /// `*.suffix`: any name ending in `.suffix`; the suffix is kept with its dot.
    Under(String),
}

/// One `read_only_requests` pattern: `METHOD HOST/PATH`, where METHOD is a method or `*`,
/// HOST a name or `*.suffix`, and PATH segments matched against a request's path template,
/// `*` matching one segment and a final `**` any number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPattern {
    text: String,
    method: Option<String>,
    host: Host,
    path: Vec<String>,
}

impl RequestPattern {
    /// Parses `METHOD HOST/PATH` (method and host case-insensitive, the path as written).
    ///
    /// # Errors
    /// [`RequestPatternError`] naming the pattern and what is wrong with it.
    pub fn parse(text: &str) -> Result<RequestPattern, RequestPatternError> {
        let form = || RequestPatternError::Form(text.to_owned());
        let (method, target) = text
            .trim()
            .split_once(char::is_whitespace)
            .ok_or_else(form)?;
        let target = target.trim();
        let slash = target.find('/').ok_or_else(form)?;
        let (host, path) = target.split_at(slash);
        let method = match method {
            "*" => None,
            m if m.bytes().all(|b| b.is_ascii_alphabetic()) => Some(m.to_ascii_uppercase()),
            _ => return Err(RequestPatternError::Method(text.to_owned())),
        };
        let host = host.to_ascii_lowercase();
        let name = host.strip_prefix("*.").unwrap_or(&host);
        let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b':';
        if name.is_empty() || !name.bytes().all(valid) {
            return Err(RequestPatternError::Host(text.to_owned()));
        }
        let host = match host.strip_prefix('*') {
            Some(suffix) => Host::Under(suffix.to_owned()),
            None => Host::Exact(host),
        };
        let path: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if path.iter().rev().skip(1).any(|s| s == "**") {
            return Err(RequestPatternError::DoubleStar(text.to_owned()));
        }
        Ok(RequestPattern {
            text: text.trim().to_owned(),
            method,
            host,
            path,
        })
    }

    /// Whether a request of `method` to `host` whose path template is `template` matches.
    pub fn matches(&self, method: &str, host: &str, template: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method)
            && match &self.host {
                Host::Exact(h) => h == host,
                Host::Under(suffix) => host.len() > suffix.len() && host.ends_with(suffix.as_str()),
            }
            && path_matches(&self.path, template.split('/').filter(|s| !s.is_empty()))
    }
}

impl fmt::Display for RequestPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether the template's segments match the pattern's.
fn path_matches<'a>(pattern: &[String], mut segments: impl Iterator<Item = &'a str>) -> bool {
    for p in pattern {
        if p == "**" {
            return true;
        }
        match segments.next() {
            Some(s) if p == "*" || p == s => {}
            _ => return false,
        }
    }
    segments.next().is_none()
}

/// The read-only requests the judge knows: the built-in ones ([`BUILTIN_READ_ONLY_REQUESTS`])
/// and those `read_only_requests` in hintaudit.toml adds. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnlyRequests(Arc<[RequestPattern]>);

impl Default for ReadOnlyRequests {
    /// The built-in read-only requests (parsed once per process).
    fn default() -> Self {
        static BUILTIN: std::sync::OnceLock<ReadOnlyRequests> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let patterns = BUILTIN_READ_ONLY_REQUESTS
                    .iter()
                    .filter_map(|(p, _)| RequestPattern::parse(p).ok())
                    .collect::<Vec<_>>();
                ReadOnlyRequests(patterns.into())
            })
            .clone()
    }
}

impl ReadOnlyRequests {
    /// No read-only request at all, not even the built-in ones.
    pub fn none() -> Self {
        ReadOnlyRequests(Arc::new([]))
    }

    /// With `pattern` added (`POST api.example.com/v1/search`).
    ///
    /// # Errors
    /// [`RequestPatternError`] when the pattern does not parse ([`RequestPattern::parse`]).
    pub fn with_pattern(self, pattern: &str) -> Result<Self, RequestPatternError> {
        let mut all = self.0.to_vec();
        all.push(RequestPattern::parse(pattern)?);
        Ok(ReadOnlyRequests(all.into()))
    }

    /// The first pattern that a request of `method` to `host` with path template `template`
    /// matches.
    pub fn find(&self, method: &str, host: &str, template: &str) -> Option<&RequestPattern> {
        self.0.iter().find(|p| p.matches(method, host, template))
    }

    /// Every pattern, the built-in ones first.
    pub fn patterns(&self) -> &[RequestPattern] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_pattern_parses() {
        for (p, source) in BUILTIN_READ_ONLY_REQUESTS {
            RequestPattern::parse(p).unwrap_or_else(|e| panic!("{e}"));
            assert!(source.starts_with("https://"), "{p}: {source}");
        }
        assert_eq!(
            ReadOnlyRequests::default().patterns().len(),
            BUILTIN_READ_ONLY_REQUESTS.len()
        );
    }

    /// One row per (pattern, method, host, template): whether it matches.
    #[test]
    fn matching() {
        for (pattern, method, host, template, want) in [
            (
                "POST api.notion.com/v1/search",
                "POST",
                "api.notion.com",
                "/v1/search",
                true,
            ),
            (
                "post API.Notion.com/v1/search/",
                "POST",
                "api.notion.com",
                "/v1/search",
                true,
            ),
            (
                "POST api.notion.com/v1/search",
                "GET",
                "api.notion.com",
                "/v1/search",
                false,
            ),
            (
                "POST api.notion.com/v1/search",
                "POST",
                "notion.com",
                "/v1/search",
                false,
            ),
            (
                "POST api.notion.com/v1/search",
                "POST",
                "api.notion.com",
                "/v1/search/x",
                false,
            ),
            (
                "POST api.notion.com/v1/search",
                "POST",
                "api.notion.com",
                "/v1",
                false,
            ),
            (
                "* api.notion.com/v1/search",
                "PUT",
                "api.notion.com",
                "/v1/search",
                true,
            ),
            (
                "POST h/v1/databases/*/query",
                "POST",
                "h",
                "/v1/databases/{id}/query",
                true,
            ),
            (
                "POST h/v1/databases/{id}/query",
                "POST",
                "h",
                "/v1/databases/{id}/query",
                true,
            ),
            (
                "POST h/v1/databases/{id}/query",
                "POST",
                "h",
                "/v1/databases/{token}/query",
                false,
            ),
            ("POST h/a/**", "POST", "h", "/a", true),
            ("POST h/a/**", "POST", "h", "/a/b/c", true),
            ("POST h/a/**", "POST", "h", "/b", false),
            ("POST h/", "POST", "h", "/", true),
            (
                "POST *.algolia.net/1/indexes/*/query",
                "POST",
                "app-dsn.algolia.net",
                "/1/indexes/{token}/query",
                true,
            ),
            (
                "POST *.algolia.net/1/indexes/*/query",
                "POST",
                "algolia.net",
                "/1/indexes/x/query",
                false,
            ),
            (
                "POST *.algolia.net/1/indexes/*/query",
                "POST",
                "evilalgolia.net",
                "/1/indexes/x/query",
                false,
            ),
        ] {
            let p = RequestPattern::parse(pattern).unwrap();
            assert_eq!(
                p.matches(method, host, template),
                want,
                "{pattern} ~ {method} {host}{template}"
            );
        }
    }

    /// One row per bad pattern: the error.
    #[test]
    fn bad_patterns_are_refused() {
        for (pattern, want) in [
            (
                "api.notion.com/v1/search",
                RequestPatternError::Form(String::new()),
            ),
            (
                "POST api.notion.com",
                RequestPatternError::Form(String::new()),
            ),
            ("PO-ST h/x", RequestPatternError::Method(String::new())),
            ("POST /x", RequestPatternError::Host(String::new())),
            ("POST a*b.com/x", RequestPatternError::Host(String::new())),
            ("POST h?x=1/x", RequestPatternError::Host(String::new())),
            (
                "POST h/**/x",
                RequestPatternError::DoubleStar(String::new()),
            ),
        ] {
            let err = RequestPattern::parse(pattern).unwrap_err();
            assert_eq!(
                std::mem::discriminant(&err),
                std::mem::discriminant(&want),
                "{pattern}: {err}"
            );
            assert!(err.to_string().contains(pattern.trim()), "{err}");
        }
    }

    #[test]
    fn configured_patterns_follow_the_builtin_ones() {
        let reads = ReadOnlyRequests::default()
            .with_pattern("POST api.example.com/v2/lookup")
            .unwrap();
        let found = reads.find("POST", "api.example.com", "/v2/lookup").unwrap();
        assert_eq!(found.to_string(), "POST api.example.com/v2/lookup");
        assert!(
            ReadOnlyRequests::none()
                .find("POST", "api.notion.com", "/v1/search")
                .is_none()
        );
    }
}
