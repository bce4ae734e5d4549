//! The GraphQL operation a request carries (GraphQL over HTTP: a POST of JSON `{query,
//! operationName, extensions}` or of `application/graphql`, a GET with `query` and
//! `operationName` parameters, and a batch as a JSON array), read with apollo-parser. Only
//! the operation's type and name are kept; the document, variables and values are dropped
//! as soon as they are read. No I/O.

use apollo_parser::Parser;
use apollo_parser::cst;
use hintaudit_core::{GraphqlKind, GraphqlOperation};
use serde_json::Value;

/// The most tokens of a document read; a longer one is an unknown operation.
const TOKEN_LIMIT: usize = 100_000;

/// Whether a path is a GraphQL endpoint's: it ends in `/graphql` (a trailing `/` allowed).
pub(crate) fn is_endpoint(path: &str) -> bool {
    path.trim_end_matches('/').ends_with("/graphql")
}

/// The operation `document` runs, chosen by `name` (`operationName`) when it holds several.
/// `None` when it is no GraphQL document and the path is no GraphQL endpoint (`at_endpoint`):
/// a search API's `{"query": "meeting notes"}`. An operation that cannot be chosen, or a
/// document that does not parse at an endpoint, is [`GraphqlKind::Unknown`].
pub(crate) fn operation(
    document: &str,
    name: Option<&str>,
    at_endpoint: bool,
) -> Option<GraphqlOperation> {
    let unknown = || at_endpoint.then(|| GraphqlOperation::new(GraphqlKind::Unknown, None));
    let tree = Parser::new(document).token_limit(TOKEN_LIMIT).parse();
    if tree.errors().len() > 0 {
        return unknown();
    }
    let operations: Vec<cst::OperationDefinition> = tree
        .document()
        .definitions()
        .filter_map(|d| match d {
            cst::Definition::OperationDefinition(op) => Some(op),
            _ => None,
        })
        .collect();
    let name_of = |op: &cst::OperationDefinition| op.name().map(|n| n.text().to_string());
    let chosen = match name {
        Some(name) => operations
            .iter()
            .find(|op| name_of(op).as_deref() == Some(name)),
        None if operations.len() == 1 => operations.first(),
        None => None,
    };
    let Some(op) = chosen else {
        // A document of fragments only, or several operations and no name: it is GraphQL,
        // and which operation runs is not known.
        return Some(GraphqlOperation::new(GraphqlKind::Unknown, None));
    };
    let kind = match op.operation_type() {
        None => GraphqlKind::Query,
        Some(t) if t.mutation_token().is_some() => GraphqlKind::Mutation,
        Some(t) if t.subscription_token().is_some() => GraphqlKind::Subscription,
        Some(t) if t.query_token().is_some() => GraphqlKind::Query,
        Some(_) => GraphqlKind::Unknown,
    };
    Some(GraphqlOperation::new(kind, name_of(op).as_deref()))
}

/// The operation of one GraphQL-over-HTTP request object: `query` read as a document; no
/// `query` but a persisted query's hash (`extensions.persistedQuery`) is an unknown
/// operation; neither is no GraphQL (an unknown operation at an endpoint).
fn of_object(object: &Value, at_endpoint: bool) -> Option<GraphqlOperation> {
    let name = object.get("operationName").and_then(Value::as_str);
    match object.get("query").and_then(Value::as_str) {
        Some(document) => operation(document, name, at_endpoint),
        None if persisted(object.get("extensions")) || at_endpoint => {
            Some(GraphqlOperation::new(GraphqlKind::Unknown, None))
        }
        None => None,
    }
}

/// Whether `extensions` names a persisted query (Apollo's `persistedQuery`).
fn persisted(extensions: Option<&Value>) -> bool {
    extensions.is_some_and(|e| e.get("persistedQuery").is_some())
}

/// The operation of a JSON body: an object, or a batch (an array of them), whose operation is
/// its first mutation, else its first unknown operation, else its first query.
pub(crate) fn of_json(body: &[u8], at_endpoint: bool) -> Option<GraphqlOperation> {
    let unknown = || at_endpoint.then(|| GraphqlOperation::new(GraphqlKind::Unknown, None));
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return unknown();
    };
    match &value {
        Value::Object(_) => of_object(&value, at_endpoint),
        Value::Array(batch) => {
            let ops: Vec<GraphqlOperation> = batch
                .iter()
                .filter_map(|o| of_object(o, at_endpoint))
                .collect();
            [GraphqlKind::Mutation, GraphqlKind::Unknown]
                .iter()
                .find_map(|k| ops.iter().find(|o| o.kind == *k))
                .or(ops.first())
                .cloned()
                .or_else(unknown)
        }
        _ => unknown(),
    }
}

/// The operation of a GET's query string (`query`, `operationName`, `extensions`).
pub(crate) fn of_query_string(query: &str, at_endpoint: bool) -> Option<GraphqlOperation> {
    let mut document = None;
    let mut name = None;
    let mut extensions = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match &*key {
            "query" => document = Some(value),
            "operationName" => name = Some(value),
            "extensions" => extensions = serde_json::from_str::<Value>(&value).ok(),
            _ => {}
        }
    }
    match document {
        Some(d) => operation(&d, name.as_deref(), at_endpoint),
        None if persisted(extensions.as_ref()) => {
            Some(GraphqlOperation::new(GraphqlKind::Unknown, None))
        }
        None => None,
    }
}

#[cfg(test)]
mod tests;
