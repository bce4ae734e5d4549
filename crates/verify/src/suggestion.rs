//! [`Suggestion`]: corrected annotations for one tool, the data `--suggest` puts in a report
//! (computed in `suggest`), as a JSON patch and as rmcp attribute text.

use hintaudit_core::{DeclaredHints, Hint, SuggestedHints};
use serde_json::{Value, json};

/// Corrected annotations for one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The tool's position in tools/list (pages concatenated), for the JSON patch.
    pub index: usize,
    /// Whether tools/list gave the tool an `annotations` object.
    pub annotated: bool,
    /// The hints as declared.
    pub declared: DeclaredHints,
    /// The hints the evidence supports: the declared ones with the corrections applied.
    pub corrected: DeclaredHints,
    /// Why, one line per correction: the finding or advice and the cases it comes from.
    pub evidence: Vec<String>,
}

impl Suggestion {
    fn hints(&self) -> SuggestedHints {
        SuggestedHints {
            declared: self.declared,
            corrected: self.corrected,
            evidence: Vec::new(),
        }
    }

    /// The hints that change, in schema order, with their new values.
    pub fn changes(&self) -> Vec<(Hint, bool)> {
        self.hints().changes()
    }

    /// The hints the suggestion names (the corrected ones that are set), in schema order:
    /// what [`Suggestion::rmcp_attribute`] prints and [`Suggestion::json_patch`] sets.
    pub fn named(&self) -> Vec<(Hint, bool)> {
        Hint::ALL
            .into_iter()
            .filter_map(|h| Some((h, self.corrected.get(h)?)))
            .collect()
    }

    /// RFC 6902 operations over the tools/list result (`/tools/<index>/annotations/...`):
    /// one `add` per hint the suggestion names, kept ones included, so the patched
    /// annotations are exactly the suggested set whatever else the answer held.
    pub fn json_patch(&self) -> Vec<Value> {
        let base = format!("/tools/{}/annotations", self.index);
        if !self.annotated {
            let value: serde_json::Map<String, Value> = self
                .named()
                .into_iter()
                .map(|(h, v)| (h.spec_name().to_owned(), json!(v)))
                .collect();
            return vec![json!({"op": "add", "path": base, "value": value})];
        }
        self.named()
            .into_iter()
            .map(|(h, v)| json!({"op": "add", "path": format!("{base}/{}", h.spec_name()), "value": v}))
            .collect()
    }

    /// The rmcp attribute with the corrected hints, e.g.
    /// `#[tool(annotations(read_only_hint = false, destructive_hint = true))]`.
    pub fn rmcp_attribute(&self) -> String {
        self.hints().rmcp_attribute()
    }
}
