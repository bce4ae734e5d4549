//! Arguments generated from a tool's `inputSchema` when the cases file gives none.
//!
//! Required fields get a value from, in order: the state in the watched trees (a git
//! repository, JSON documents: `crate::state_args`, filled over the generated set), the test
//! database (id-like fields), `examples`/`example`, `default`, `const`, the first `enum`
//! value, the first value the description quotes, or a plain value of the field's type (an
//! array gets one item: an empty list acts on nothing). Mode-like fields (an enum of up to 8 values, or a boolean named like `dry_run`) are
//! tried with every value, even when optional: one mode may write where another does not
//! (at most [`MAX_GENERATED_CASES`] combinations; the tool report says when they were cut).

use serde_json::{Map, Value, json};

/// Most argument sets one tool gets from mode combinations.
pub(crate) const MAX_GENERATED_CASES: usize = 16;
const MAX_MODE_VALUES: usize = 8;
const MODE_BOOLEANS: &[&str] = &[
    "dry_run",
    "dryrun",
    "dryRun",
    "preview",
    "confirm",
    "force",
    "apply",
    "commit",
    "execute",
    "simulate",
    "validate_only",
    "validateOnly",
];

/// A field whose value the generator wants from the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdField {
    /// The property name, e.g. `booking_id`.
    pub name: String,
    /// `integer`, `number` or `string`.
    pub ty: String,
}

/// Whether a property name looks like an identifier of a row.
pub(crate) fn is_id_like(name: &str, schema: &Value) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "id"
        || lower.ends_with("_id")
        || (name.ends_with("Id") && name.len() > 2)
        || lower == "uuid"
        || lower.ends_with("_uuid")
        || schema.get("format").and_then(Value::as_str) == Some("uuid")
}

/// Resolves a local `$ref` (`#/$defs/X`, `#/definitions/X`) against the root schema, and
/// picks the first non-null branch of `anyOf`/`oneOf` (how pydantic spells `Optional`).
pub(crate) fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..16 {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                Some(t) => {
                    s = t;
                    continue;
                }
                None => return s,
            }
        }
        if let Some(branches) = s
            .get("anyOf")
            .or_else(|| s.get("oneOf"))
            .and_then(Value::as_array)
            && let Some(b) = branches
                .iter()
                .find(|b| b.get("type").and_then(Value::as_str) != Some("null"))
        {
            s = b;
            continue;
        }
        return s;
    }
    s
}

fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

/// The mode values of a property, when it is mode-like.
fn mode_values(name: &str, schema: &Value) -> Option<Vec<Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array)
        && (2..=MAX_MODE_VALUES).contains(&values.len())
    {
        return Some(values.clone());
    }
    if type_of(schema) == Some("boolean") && MODE_BOOLEANS.contains(&name) {
        return Some(vec![json!(true), json!(false)]);
    }
    None
}

/// A value of the schema's own making (examples, default, const, enum), if it has one.
fn declared_value(schema: &Value) -> Option<Value> {
    declared(schema).map(|(v, _)| v)
}

/// [`declared_value`] with where it came from, as reports say it (`the schema's default`).
fn declared(schema: &Value) -> Option<(Value, &'static str)> {
    if let Some(e) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return Some((e.clone(), "the schema's example"));
    }
    for (key, source) in [
        ("example", "the schema's example"),
        ("default", "the schema's default"),
        ("const", "the schema's const"),
    ] {
        if let Some(v) = schema.get(key) {
            return Some((v.clone(), source));
        }
    }
    if let Some(v) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return Some((v.clone(), "the schema's first enum value"));
    }
    let quoted = type_of(schema) == Some("string") || schema.get("type").is_none();
    let description = schema.get("description").and_then(Value::as_str);
    quoted
        .then(|| description.and_then(first_quoted))
        .flatten()
        .map(|q| (json!(q), "a value quoted in the description"))
}

/// The first value a description quotes (`'local'`, `"all"`, `` `main` ``): at most 40
/// characters on one line.
fn first_quoted(description: &str) -> Option<&str> {
    let mut rest = description;
    while let Some(at) = rest.find(['\'', '"', '`']) {
        let quote = rest[at..].chars().next()?;
        let after = &rest[at + 1..];
        // An apostrophe inside a word (`don't`) opens no quote.
        if rest[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            rest = after;
            continue;
        }
        let end = after.find(quote)?;
        let inner = &after[..end];
        if (1..=40).contains(&inner.len()) && !inner.contains('\n') && !inner.starts_with(' ') {
            return Some(inner);
        }
        rest = &after[end + 1..];
    }
    None
}

/// Where a generated SQL argument comes from.
pub(crate) const PROBE_SOURCE: &str = "a probe statement (a one-row read of a watched table)";
const PLACEHOLDER_SOURCE: &str = "a placeholder of its type";

/// A plain value of a schema's type; `None` when the schema says too little.
fn plain_value(root: &Value, schema: &Value, depth: usize) -> Option<Value> {
    let schema = resolve(root, schema);
    if let Some(v) = declared_value(schema) {
        return Some(v);
    }
    if depth > 8 {
        return None;
    }
    Some(match type_of(schema)? {
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some("email") => json!("hintaudit@example.com"),
            Some("date") => json!("2030-01-01"),
            Some("date-time") => json!("2030-01-01T10:00:00Z"),
            Some("time") => json!("10:00:00"),
            Some("uuid") => json!("00000000-0000-4000-8000-000000000001"),
            Some("uri") | Some("url") => json!("http://127.0.0.1/"),
            _ => {
                let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                json!("hintaudit".repeat((min as usize).div_ceil(9).max(1)))
            }
        },
        "integer" => json!(
            schema
                .get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(1)
        ),
        "number" => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        "array" => {
            // One item at least: a call with an empty list acts on nothing.
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema
                .get("items")
                .and_then(|i| plain_value(root, i, depth + 1));
            match item {
                Some(item) => Value::Array(vec![item; min.max(1) as usize]),
                None if min == 0 => json!([]),
                None => return None,
            }
        }
        "object" => Value::Object(required_object(root, schema, depth + 1)?),
        _ => return None,
    })
}

fn required_object(root: &Value, schema: &Value, depth: usize) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    let props = schema.get("properties");
    for name in required(schema) {
        let prop = props.and_then(|p| p.get(&name)).unwrap_or(&Value::Null);
        out.insert(name, plain_value(root, prop, depth)?);
    }
    Some(out)
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The plan for one tool's generated arguments: a base object, id-like fields to fill from
/// the database, and mode fields to expand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub base: Map<String, Value>,
    pub ids: Vec<IdField>,
    pub modes: Vec<(String, Vec<Value>)>,
    /// Fields of `base` whose values are made up (no example, default, const or enum).
    pub made_up: Vec<String>,
    /// String fields that take SQL (by name or description): the verifier puts a harmless
    /// statement against a watched table in them, even when the schema has a default or
    /// an example (a default such as `"all"` is no statement). They count as made up.
    pub sql: Vec<String>,
    /// Where each generated field's value comes from, for reports (`the schema's default`,
    /// `a probe statement …`); id-like fields are filled by the verifier.
    pub sources: Vec<(String, &'static str)>,
    /// When no field is required: the optional fields that can be filled, tried as a
    /// second argument set after the empty one.
    pub optional: Map<String, Value>,
}

/// Whether a string property takes SQL text, by its name or its description.
pub(crate) fn is_sql_field(name: &str, schema: &Value) -> bool {
    let lower = name.to_ascii_lowercase();
    let by_name = matches!(lower.as_str(), "sql" | "query" | "statement" | "stmt")
        || lower.contains("sql")
        || lower.ends_with("_query")
        || lower.ends_with("_statement");
    let by_description = schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| {
            let d = d.to_ascii_lowercase();
            d.contains("sql") || d.contains("query to execute") || d.contains("select statement")
        });
    type_of(schema) == Some("string") && (by_name || by_description)
}

/// Plans arguments for an input schema, or says why it cannot.
pub(crate) fn plan(input_schema: &Value) -> Result<Plan, String> {
    let root = input_schema;
    let props = root.get("properties").and_then(Value::as_object);
    let mut plan = Plan {
        base: Map::new(),
        ids: Vec::new(),
        modes: Vec::new(),
        made_up: Vec::new(),
        sql: Vec::new(),
        sources: Vec::new(),
        optional: Map::new(),
    };
    let required = required(root);
    if let Some(props) = props {
        for (name, prop) in props {
            let prop = resolve(root, prop);
            if let Some(values) = mode_values(name, prop) {
                let source = if prop.get("enum").is_some() {
                    "each enum value in turn"
                } else {
                    "true and false in turn"
                };
                plan.sources.push((name.clone(), source));
                plan.modes.push((name.clone(), values));
            }
        }
    }
    for name in &required {
        if plan.modes.iter().any(|(n, _)| n == name) {
            continue;
        }
        let prop = props
            .and_then(|p| p.get(name))
            .map(|p| resolve(root, p))
            .unwrap_or(&Value::Null);
        if declared_value(prop).is_none()
            && is_id_like(name, prop)
            && let Some(ty @ ("integer" | "number" | "string")) = type_of(prop)
        {
            plan.ids.push(IdField {
                name: name.clone(),
                ty: ty.to_owned(),
            });
            continue;
        }
        plan.note(name, prop);
        let value = plain_value(root, prop, 0)
            .ok_or_else(|| format!("cannot generate a value for required field {name:?}"))?;
        plan.base.insert(name.clone(), value);
    }
    if required.is_empty()
        && let Some(props) = props
    {
        for (name, prop) in props {
            if plan.modes.iter().any(|(n, _)| n == name) {
                continue;
            }
            let prop = resolve(root, prop);
            if let Some(v) = plain_value(root, prop, 0) {
                plan.note(name, prop);
                plan.optional.insert(name.clone(), v);
            }
        }
    }
    Ok(plan)
}

/// Converts a database value (text form) to the JSON type a field wants.
pub(crate) fn typed(text: &str, ty: &str) -> Value {
    match ty {
        "integer" => text
            .parse::<i64>()
            .map_or_else(|_| json!(text), |i| json!(i)),
        "number" => text
            .parse::<f64>()
            .map_or_else(|_| json!(text), |f| json!(f)),
        _ => json!(text),
    }
}

/// One generated argument set.
#[derive(Debug, Clone)]
pub(crate) struct ArgumentSet {
    /// `generated`, `generated mode=apply`, `generated +optional`.
    pub label: String,
    pub arguments: Value,
    /// Fields whose values are made up.
    pub made_up: Vec<String>,
    /// Each field present and where its value comes from (id-like fields: added by the
    /// verifier, which fills them).
    pub sources: Vec<(String, String)>,
}

/// Generated argument sets, and how many combinations there were before
/// [`MAX_GENERATED_CASES`] cut them.
pub(crate) struct Expansion {
    pub sets: Vec<ArgumentSet>,
    pub combinations: usize,
}

impl Plan {
    /// Records where a generated field's value comes from: a probe statement for a field
    /// that takes SQL (made up, whatever the schema declares), the schema's own value, or a
    /// placeholder (made up).
    fn note(&mut self, name: &str, prop: &Value) {
        let declared = declared(prop).map(|(_, source)| source);
        let sql = is_sql_field(name, prop);
        if sql {
            self.sql.push(name.to_owned());
        }
        if sql || declared.is_none() {
            self.made_up.push(name.to_owned());
        }
        let source = if sql {
            PROBE_SOURCE
        } else {
            declared.unwrap_or(PLACEHOLDER_SOURCE)
        };
        self.sources.push((name.to_owned(), source));
    }

    /// Argument sets: the base with ids filled, times every combination of mode values
    /// (at most [`MAX_GENERATED_CASES`]), each with a label such as `mode=apply`. When no
    /// field is required and some optional ones can be filled, every set comes twice:
    /// without and with them (`+optional`).
    pub fn expand(&self, ids: &Map<String, Value>) -> Expansion {
        let mut base = self.base.clone();
        base.extend(ids.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut sets: Vec<(Vec<String>, Map<String, Value>)> = vec![(Vec::new(), base.clone())];
        if !self.optional.is_empty() {
            let mut with = base;
            with.extend(self.optional.iter().map(|(k, v)| (k.clone(), v.clone())));
            sets.push((vec!["+optional".to_owned()], with));
        }
        let combinations = sets.len()
            * self
                .modes
                .iter()
                .map(|(_, v)| v.len().max(1))
                .product::<usize>();
        for (name, values) in &self.modes {
            let mut next = Vec::new();
            for (labels, args) in &sets {
                for v in values {
                    if next.len() >= MAX_GENERATED_CASES {
                        break;
                    }
                    let mut args = args.clone();
                    args.insert(name.clone(), v.clone());
                    let mut labels = labels.clone();
                    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    labels.push(format!("{name}={shown}"));
                    next.push((labels, args));
                }
            }
            sets = next;
        }
        let sets = sets
            .into_iter()
            .map(|(labels, args)| {
                let label = if labels.is_empty() {
                    "generated".to_owned()
                } else {
                    format!("generated {}", labels.join(" "))
                };
                let made_up = self
                    .made_up
                    .iter()
                    .filter(|f| args.contains_key(f.as_str()))
                    .cloned()
                    .collect();
                let sources = self
                    .sources
                    .iter()
                    .filter(|(f, _)| args.contains_key(f.as_str()))
                    .map(|(f, source)| (f.clone(), (*source).to_owned()))
                    .collect();
                ArgumentSet {
                    label,
                    arguments: Value::Object(args),
                    made_up,
                    sources,
                }
            })
            .collect();
        Expansion { sets, combinations }
    }
}

mod verbs;

pub(crate) use verbs::{ToolVerb, name_verb, tool_verb};

#[cfg(test)]
mod tests;
