//! GraphQL operations as requests carry them: the type and, when it is a valid GraphQL name,
//! the name. Reading the document is the source's (hintaudit-egress parses it); the judge
//! reads only what is kept here.

use std::fmt;

/// The longest operation name kept, in bytes; a longer one is dropped.
const NAME_MAX: usize = 64;

/// The type of a GraphQL operation (GraphQL spec, section 2.3 *Operations*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GraphqlKind {
    /// `query`, or the shorthand `{ … }`: a read.
    Query,
    /// `mutation`: a write.
    Mutation,
    /// `subscription`: a read.
    Subscription,
    /// Not known: a persisted query (a hash and no document), a document that does not parse,
    /// or one whose operation cannot be chosen. Never taken as a read.
    Unknown,
}

impl GraphqlKind {
    /// `query`, `mutation`, `subscription` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            GraphqlKind::Query => "query",
            GraphqlKind::Mutation => "mutation",
            GraphqlKind::Subscription => "subscription",
            GraphqlKind::Unknown => "unknown",
        }
    }
}

/// A GraphQL operation: its type and its name (`None` for an anonymous operation, and for a
/// name that is not a GraphQL name of at most 64 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GraphqlOperation {
    /// The operation's type.
    pub kind: GraphqlKind,
    /// The operation's name, where it has a valid one.
    pub name: Option<String>,
}

impl GraphqlOperation {
    /// An operation of `kind` named `name`; a name that is not a GraphQL `Name`
    /// (`/[_A-Za-z][_0-9A-Za-z]*/`) of at most 64 bytes is dropped, so that no value can pass
    /// for one.
    pub fn new(kind: GraphqlKind, name: Option<&str>) -> Self {
        let valid = |n: &&str| {
            n.len() <= NAME_MAX
                && n.bytes()
                    .next()
                    .is_some_and(|b| b == b'_' || b.is_ascii_alphabetic())
                && n.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric())
        };
        GraphqlOperation {
            kind,
            name: name.filter(valid).map(str::to_owned),
        }
    }
}

impl fmt::Display for GraphqlOperation {
    /// `graphql mutation AddComment`, `graphql query` (anonymous), `graphql unknown operation`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, &self.name) {
            (GraphqlKind::Unknown, _) => f.write_str("graphql unknown operation"),
            (kind, Some(name)) => write!(f, "graphql {} {name}", kind.as_str()),
            (kind, None) => write!(f, "graphql {}", kind.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per name: kept or dropped.
    #[test]
    fn only_graphql_names_are_kept() {
        let long = "a".repeat(65);
        for (name, kept) in [
            (Some("AddComment"), Some("AddComment")),
            (Some("_private2"), Some("_private2")),
            (None, None),
            (Some(""), None),
            (Some("2fast"), None),
            (Some("token=abc"), None),
            (Some("héllo"), None),
            (Some(long.as_str()), None),
        ] {
            let op = GraphqlOperation::new(GraphqlKind::Query, name);
            assert_eq!(op.name.as_deref(), kept, "{name:?}");
        }
    }

    #[test]
    fn operations_read_as_evidence() {
        let op = |k, n| GraphqlOperation::new(k, n).to_string();
        assert_eq!(
            op(GraphqlKind::Mutation, Some("AddComment")),
            "graphql mutation AddComment"
        );
        assert_eq!(op(GraphqlKind::Query, None), "graphql query");
        assert_eq!(
            op(GraphqlKind::Unknown, Some("X")),
            "graphql unknown operation"
        );
    }
}
