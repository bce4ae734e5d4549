//! Action metadata: the draft `io.modelcontextprotocol/action-metadata` extension a tool may
//! declare besides its hints ([design: action metadata](../../../docs/design.md#action-metadata)).
//!
//! The draft puts an object under [`ACTION_METADATA_KEY`] in the tool's `annotations`; typed
//! SDKs (rmcp's `ToolAnnotations`, the Python SDK 2.x) drop keys they do not know there, so
//! servers publish it in the tool's `_meta` instead. [`ActionMetadata::from_tool_json`] reads
//! both, `_meta` first. Of its fields the judge reads two, compared case-insensitively:
//! `outcome` (`benign` promises no consequence) and `inputMetadata.destination` (`internal`
//! promises the inputs stay inside). Any other value is kept as [`ActionOutcome::Other`] or
//! [`InputDestination::Other`]: tolerated, never judged.
//!
//! ```
//! use hintaudit_core::{ActionMetadata, ActionOutcome, InputDestination};
//! let tool = serde_json::json!({
//!     "name": "archive",
//!     "_meta": {"io.modelcontextprotocol/action-metadata": {
//!         "outcome": "Benign", "inputMetadata": {"destination": "INTERNAL"}}}
//! });
//! let action = ActionMetadata::from_tool_json(tool.get("_meta"), tool.get("annotations"))
//!     .expect("declared");
//! assert_eq!(action.outcome, Some(ActionOutcome::Benign));
//! assert_eq!(action.destination, Some(InputDestination::Internal));
//! ```

use serde_json::Value;

/// The key of the draft extension, in a tool's `_meta` or `annotations`.
pub const ACTION_METADATA_KEY: &str = "io.modelcontextprotocol/action-metadata";

/// The value [`ActionMetadata::tightened`] serves for an `outcome` the evidence contradicts.
pub const NOT_BENIGN_OUTCOME: &str = "consequential";
/// The value [`ActionMetadata::tightened`] serves for a destination the evidence contradicts.
pub const OUTBOUND_DESTINATION: &str = "external";

/// The draft's `outcome`: what invoking the tool can cause in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionOutcome {
    /// `benign`: no consequence; contradicted by any write or deletion.
    Benign,
    /// `consequential`: the call may change something.
    Consequential,
    /// A value the draft does not define (it keeps the vocabulary open): never judged.
    Other,
}

/// The draft's `inputMetadata.destination`: where the tool's inputs may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputDestination {
    /// `internal`: inputs stay with the server and its own systems; contradicted by a request
    /// outside the closed world.
    Internal,
    /// `external`: inputs may leave for outside hosts.
    External,
    /// A value the draft does not define: never judged.
    Other,
}

impl ActionOutcome {
    /// Reads a value, case-insensitively and trimmed.
    pub fn parse(value: &str) -> Self {
        match value.trim().to_ascii_lowercase().as_str() {
            "benign" => ActionOutcome::Benign,
            "consequential" => ActionOutcome::Consequential,
            _ => ActionOutcome::Other,
        }
    }
}

impl InputDestination {
    /// Reads a value, case-insensitively and trimmed.
    pub fn parse(value: &str) -> Self {
        match value.trim().to_ascii_lowercase().as_str() {
            "internal" => InputDestination::Internal,
            "external" => InputDestination::External,
            _ => InputDestination::Other,
        }
    }
}

/// What a tool's action metadata declares, of the fields the judge reads; `None`: unset
/// (missing, `null` or not a string).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ActionMetadata {
    /// `outcome`.
    pub outcome: Option<ActionOutcome>,
    /// `inputMetadata.destination`.
    pub destination: Option<InputDestination>,
}

impl ActionMetadata {
    /// The action metadata of a tool, from its `_meta` object, else from its `annotations`
    /// object (where an untyped server keeps the draft's place); `None` when neither has an
    /// object under [`ACTION_METADATA_KEY`].
    pub fn from_tool_json(meta: Option<&Value>, annotations: Option<&Value>) -> Option<Self> {
        [meta, annotations]
            .into_iter()
            .flatten()
            .find_map(|v| v.get(ACTION_METADATA_KEY).filter(|a| a.is_object()))
            .map(ActionMetadata::from_json)
    }

    /// Reads the extension's own object (`{"outcome": …, "inputMetadata": {…}}`); anything
    /// but a string is unset.
    pub fn from_json(object: &Value) -> Self {
        ActionMetadata {
            outcome: object
                .get("outcome")
                .and_then(Value::as_str)
                .map(ActionOutcome::parse),
            destination: object
                .pointer("/inputMetadata/destination")
                .and_then(Value::as_str)
                .map(InputDestination::parse),
        }
    }

    /// Tightens the extension's object `object` in place (every other member kept): a
    /// `benign` outcome becomes [`NOT_BENIGN_OUTCOME`] when `outcome`, an `internal`
    /// destination [`OUTBOUND_DESTINATION`] when `destination`. Any other value is left as
    /// declared: it is never loosened, and an unknown one is not ours to read. Returns
    /// whether anything changed.
    ///
    /// ```
    /// use hintaudit_core::ActionMetadata;
    /// let mut a = serde_json::json!({"outcome": "BENIGN", "requiresReview": false,
    ///                                "inputMetadata": {"destination": "internal"}});
    /// assert!(ActionMetadata::tightened(&mut a, true, false));
    /// assert_eq!(a["outcome"], "consequential");
    /// assert_eq!(a["inputMetadata"]["destination"], "internal");
    /// assert!(!ActionMetadata::tightened(&mut a, true, false), "already tightened");
    /// ```
    pub fn tightened(object: &mut Value, outcome: bool, destination: bool) -> bool {
        let declared = ActionMetadata::from_json(object);
        let mut changed = false;
        if outcome && declared.outcome == Some(ActionOutcome::Benign) {
            object["outcome"] = Value::from(NOT_BENIGN_OUTCOME);
            changed = true;
        }
        if destination && declared.destination == Some(InputDestination::Internal) {
            object["inputMetadata"]["destination"] = Value::from(OUTBOUND_DESTINATION);
            changed = true;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_read_case_insensitively_and_unknown_ones_tolerated() {
        use ActionOutcome as O;
        use InputDestination as D;
        let rows = [
            (json!({"outcome": "benign"}), Some(O::Benign), None),
            (json!({"outcome": " BeNiGn "}), Some(O::Benign), None),
            (
                json!({"outcome": "Consequential"}),
                Some(O::Consequential),
                None,
            ),
            (
                json!({"outcome": "research execution"}),
                Some(O::Other),
                None,
            ),
            (json!({"outcome": null, "inputMetadata": null}), None, None),
            (json!({"outcome": true}), None, None),
            (
                json!({"inputMetadata": {"destination": "Internal"}}),
                None,
                Some(D::Internal),
            ),
            (
                json!({"inputMetadata": {"destination": "EXTERNAL"}}),
                None,
                Some(D::External),
            ),
            (
                json!({"inputMetadata": {"destination": "ephemeral"}}),
                None,
                Some(D::Other),
            ),
            (json!({"inputMetadata": "internal"}), None, None),
        ];
        for (object, outcome, destination) in rows {
            let got = ActionMetadata::from_json(&object);
            assert_eq!(
                (got.outcome, got.destination),
                (outcome, destination),
                "{object}"
            );
        }
    }

    #[test]
    fn meta_comes_first_then_annotations() {
        let key = ACTION_METADATA_KEY;
        let meta = json!({ key: {"outcome": "benign"} });
        let annotations = json!({ "readOnlyHint": true, key: {"outcome": "consequential"} });
        let read = |m: Option<&Value>, a: Option<&Value>| {
            ActionMetadata::from_tool_json(m, a).map(|x| x.outcome)
        };
        assert_eq!(
            read(Some(&meta), Some(&annotations)),
            Some(Some(ActionOutcome::Benign))
        );
        assert_eq!(
            read(None, Some(&annotations)),
            Some(Some(ActionOutcome::Consequential))
        );
        assert_eq!(read(Some(&json!({ key: "benign" })), None), None);
        assert_eq!(read(Some(&json!({})), Some(&json!({}))), None);
        assert_eq!(read(None, None), None);
    }

    #[test]
    fn tightening_never_loosens_and_leaves_unknown_values() {
        let rows = [
            (
                json!({"outcome": "benign"}),
                json!({"outcome": "consequential"}),
            ),
            (
                json!({"outcome": "irreversible"}),
                json!({"outcome": "irreversible"}),
            ),
            (
                json!({"inputMetadata": {"destination": "INTERNAL", "sensitivity": "x"}}),
                json!({"inputMetadata": {"destination": "external", "sensitivity": "x"}}),
            ),
            (
                json!({"inputMetadata": {"destination": "ephemeral"}}),
                json!({"inputMetadata": {"destination": "ephemeral"}}),
            ),
        ];
        for (mut object, want) in rows {
            let before = object.clone();
            let changed = ActionMetadata::tightened(&mut object, true, true);
            assert_eq!(object, want, "{before}");
            assert_eq!(changed, before != want, "{before}");
        }
    }
}
