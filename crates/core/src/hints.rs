//! Declared tool hints, tri-state, as the MCP schema defines them.
//!
//! Source: MCP specification, `ToolAnnotations` (schema 2025-06-18 and later). Every hint is
//! tri-state here: [`None`] means the server did not declare it (or declared `null`). The
//! judge sees the declared value; [`DeclaredHints::effective`] applies the spec defaults only
//! when a rule needs the value a client would act on.

use serde_json::Value;

/// One of the four behavioural hints of MCP's `ToolAnnotations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    /// `readOnlyHint`: the tool does not modify its environment. Default false.
    ReadOnly,
    /// `destructiveHint`: the tool may delete or overwrite. Default true. Meaningful only when
    /// `readOnlyHint` is false.
    Destructive,
    /// `idempotentHint`: repeating a call with the same arguments has no further effect.
    /// Default false. Meaningful only when `readOnlyHint` is false.
    Idempotent,
    /// `openWorldHint`: the tool may reach entities outside the server's closed domain.
    /// Default true.
    OpenWorld,
}

impl Hint {
    /// All four hints, in the order of the MCP schema.
    pub const ALL: [Hint; 4] = [
        Hint::ReadOnly,
        Hint::Destructive,
        Hint::Idempotent,
        Hint::OpenWorld,
    ];

    /// The field name in the MCP schema, e.g. `readOnlyHint`.
    pub fn spec_name(self) -> &'static str {
        match self {
            Hint::ReadOnly => "readOnlyHint",
            Hint::Destructive => "destructiveHint",
            Hint::Idempotent => "idempotentHint",
            Hint::OpenWorld => "openWorldHint",
        }
    }

    /// The snake_case name used in metric labels and span attributes, e.g. `read_only`.
    pub fn label(self) -> &'static str {
        match self {
            Hint::ReadOnly => "read_only",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "open_world",
        }
    }

    /// The value a client assumes when the hint is unset (MCP schema defaults).
    pub fn default_value(self) -> bool {
        match self {
            Hint::ReadOnly => false,
            Hint::Destructive => true,
            Hint::Idempotent => false,
            Hint::OpenWorld => true,
        }
    }
}

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spec_name())
    }
}

/// The hints a tool declares, each `Some(value)` or `None` for unset (missing or `null`).
///
/// Serializes (serde) as MCP's JSON `ToolAnnotations` hints: in schema order, by their spec
/// names ([`Hint::spec_name`]), unset hints left out, e.g.
/// `{"readOnlyHint":false,"destructiveHint":true}`.
///
/// ```
/// use hintaudit_core::{DeclaredHints, Hint};
/// let json = serde_json::json!({"readOnlyHint": true, "destructiveHint": null});
/// let hints = DeclaredHints::from_annotations_json(Some(&json));
/// assert_eq!(hints.read_only, Some(true));
/// assert_eq!(hints.destructive, None);
/// assert_eq!(hints.label(Hint::Destructive), "unset");
/// // readOnlyHint true: destructiveHint is not meaningful, whatever its default says.
/// assert!(!hints.effective().destructive);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct DeclaredHints {
    /// `readOnlyHint`.
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl DeclaredHints {
    /// Hints from the four tri-state values, in the order of the MCP schema: `readOnlyHint`,
    /// `destructiveHint`, `idempotentHint`, `openWorldHint`; `None` is unset.
    ///
    /// ```
    /// use hintaudit_core::{DeclaredHints, Hint};
    /// // A lookup that declares itself read-only and closed-world, leaving the rest unset.
    /// const LOOKUP: DeclaredHints = DeclaredHints::new(Some(true), None, None, Some(false));
    /// assert_eq!(LOOKUP.get(Hint::ReadOnly), Some(true));
    /// assert_eq!(LOOKUP.compact(), "ro=true d=unset i=unset ow=false");
    /// assert_eq!(DeclaredHints::new(None, None, None, None), DeclaredHints::default());
    /// ```
    pub const fn new(
        read_only: Option<bool>,
        destructive: Option<bool>,
        idempotent: Option<bool>,
        open_world: Option<bool>,
    ) -> Self {
        DeclaredHints {
            read_only,
            destructive,
            idempotent,
            open_world,
        }
    }

    /// Reads hints from a tool's `annotations` JSON object. Missing fields, `null` values and
    /// non-boolean values are all unset; a missing or non-object `annotations` gives all unset.
    pub fn from_annotations_json(annotations: Option<&Value>) -> Self {
        let get = |key: &str| {
            annotations
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
        };
        DeclaredHints {
            read_only: get("readOnlyHint"),
            destructive: get("destructiveHint"),
            idempotent: get("idempotentHint"),
            open_world: get("openWorldHint"),
        }
    }

    /// The declared value of one hint.
    pub fn get(&self, hint: Hint) -> Option<bool> {
        match hint {
            Hint::ReadOnly => self.read_only,
            Hint::Destructive => self.destructive,
            Hint::Idempotent => self.idempotent,
            Hint::OpenWorld => self.open_world,
        }
    }

    /// `"true"`, `"false"` or `"unset"`: the hint label values of
    /// [design: telemetry names](../../../docs/design.md#5-telemetry-names).
    pub fn label(&self, hint: Hint) -> &'static str {
        tri_label(self.get(hint))
    }

    /// Whether a hint is meaningful under these hints: `destructiveHint` and `idempotentHint`
    /// are meaningful only when `readOnlyHint` is not true.
    pub fn is_meaningful(&self, hint: Hint) -> bool {
        match hint {
            Hint::Destructive | Hint::Idempotent => self.read_only != Some(true),
            Hint::ReadOnly | Hint::OpenWorld => true,
        }
    }

    /// The hints a client acts on: spec defaults for unset hints, and `destructive` and
    /// `idempotent` forced to false when the tool is read-only (a read-only tool neither
    /// destroys nor has further effects). Unlike rmcp's `ToolAnnotations::is_destructive()`,
    /// this honours `readOnlyHint`.
    pub fn effective(&self) -> EffectiveHints {
        let read_only = self.read_only.unwrap_or(Hint::ReadOnly.default_value());
        EffectiveHints {
            read_only,
            destructive: !read_only
                && self
                    .destructive
                    .unwrap_or(Hint::Destructive.default_value()),
            idempotent: !read_only && self.idempotent.unwrap_or(Hint::Idempotent.default_value()),
            open_world: self.open_world.unwrap_or(Hint::OpenWorld.default_value()),
        }
    }

    /// Hints that are unset and meaningful, in schema order.
    pub fn missing(&self) -> impl Iterator<Item = Hint> + '_ {
        Hint::ALL
            .into_iter()
            .filter(|h| self.get(*h).is_none() && self.is_meaningful(*h))
    }

    /// A compact form for tables: `ro=true d=unset i=false ow=unset`.
    pub fn compact(&self) -> String {
        format!(
            "ro={} d={} i={} ow={}",
            self.label(Hint::ReadOnly),
            self.label(Hint::Destructive),
            self.label(Hint::Idempotent),
            self.label(Hint::OpenWorld)
        )
    }
}

/// `"true"`, `"false"` or `"unset"` for a tri-state value.
pub fn tri_label(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "true",
        Some(false) => "false",
        None => "unset",
    }
}

/// The hints a client acts on, after spec defaults. See [`DeclaredHints::effective`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveHints {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may delete or overwrite (always false for read-only tools).
    pub destructive: bool,
    /// Repeats have no further effect (always false for read-only tools).
    pub idempotent: bool,
    /// The tool may reach outside the server's closed domain.
    pub open_world: bool,
}

/// How suggested annotations are written: the form the audited server's author pastes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnnotationsForm {
    /// rmcp's attribute, `#[tool(annotations(read_only_hint = false, ...))]`: for a Rust
    /// server the layer wraps in its process.
    #[default]
    RmcpAttribute,
    /// MCP's JSON form of `ToolAnnotations`, `{"readOnlyHint": false, ...}`: for a server in
    /// any language (`hintaudit proxy`).
    McpJson,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each hint alone serializes under its spec name; together, in schema order.
    #[test]
    fn serialized_names_are_the_spec_names() {
        for h in Hint::ALL {
            let mut hints = DeclaredHints::default();
            match h {
                Hint::ReadOnly => hints.read_only = Some(true),
                Hint::Destructive => hints.destructive = Some(true),
                Hint::Idempotent => hints.idempotent = Some(true),
                Hint::OpenWorld => hints.open_world = Some(true),
            }
            let text = serde_json::to_string(&hints).unwrap();
            assert_eq!(text, format!("{{\"{}\":true}}", h.spec_name()));
            assert_eq!(
                DeclaredHints::from_annotations_json(Some(&json!(hints))),
                hints
            );
        }
        let all = DeclaredHints::new(Some(false), Some(true), Some(false), Some(true));
        let text = serde_json::to_string(&all).unwrap();
        assert_eq!(
            text,
            r#"{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}"#
        );
        assert_eq!(
            serde_json::to_string(&DeclaredHints::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn parsing_is_tolerant_and_tri_state() {
        let cases = [
            (json!({}), DeclaredHints::default()),
            (json!(null), DeclaredHints::default()),
            (json!("nonsense"), DeclaredHints::default()),
            (
                json!({"readOnlyHint": null, "destructiveHint": false, "idempotentHint": "yes", "openWorldHint": true}),
                DeclaredHints {
                    read_only: None,
                    destructive: Some(false),
                    idempotent: None,
                    open_world: Some(true),
                },
            ),
        ];
        for (json, want) in cases {
            assert_eq!(
                DeclaredHints::from_annotations_json(Some(&json)),
                want,
                "{json}"
            );
        }
        assert_eq!(
            DeclaredHints::from_annotations_json(None),
            DeclaredHints::default()
        );
    }

    #[test]
    fn effective_applies_defaults_and_read_only_rule() {
        // (read_only, destructive, idempotent, open_world) declared -> effective
        let rows = [
            ((None, None, None, None), (false, true, false, true)),
            ((Some(true), None, None, None), (true, false, false, true)),
            (
                (Some(true), Some(true), Some(true), Some(false)),
                (true, false, false, false),
            ),
            (
                (Some(false), Some(false), Some(true), None),
                (false, false, true, true),
            ),
        ];
        for ((r, d, i, o), (er, ed, ei, eo)) in rows {
            let h = DeclaredHints {
                read_only: r,
                destructive: d,
                idempotent: i,
                open_world: o,
            };
            let e = h.effective();
            assert_eq!(
                (e.read_only, e.destructive, e.idempotent, e.open_world),
                (er, ed, ei, eo),
                "{h:?}"
            );
        }
    }

    #[test]
    fn missing_lists_only_meaningful_hints() {
        let ro = DeclaredHints {
            read_only: Some(true),
            ..Default::default()
        };
        assert_eq!(ro.missing().collect::<Vec<_>>(), vec![Hint::OpenWorld]);
        let none = DeclaredHints::default();
        assert_eq!(none.missing().count(), 4);
    }
}
