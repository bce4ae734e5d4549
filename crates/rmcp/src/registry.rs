//! The hints registry: the declared hints of every tool the inner server serves.
//!
//! Filled without any client call: from `ServerHandler::get_tool` the first time a tool is
//! called (for `#[tool_handler]` servers that answers from the router), and from every
//! tools/list answer that passes through the layer (the latest listing wins). Hints are read
//! from the tool's serialized `annotations` JSON with
//! [`DeclaredHints::from_annotations_json`], so `null`, missing and non-boolean values all
//! count as unset, never as false.
//!
//! A tool's action metadata (the draft `io.modelcontextprotocol/action-metadata`) is read
//! with its hints, from its `_meta` (rmcp's typed `ToolAnnotations` drops the key the draft
//! puts in `annotations`), and kept beside them.
//!
//! A hand-written handler that does not implement `get_tool` has its tools reported as unknown
//! until a client has listed them; [`HintAudit::learn_tools`](crate::HintAudit::learn_tools)
//! seeds the registry at start-up.

use hashbrown::HashMap;
use parking_lot::RwLock;
use std::sync::Arc;

use hintaudit_core::{ACTION_METADATA_KEY, ActionMetadata, DeclaredHints};
use rmcp::model::Tool;

/// Most tools whose hints one [`crate::HintAudit`] caches. Tools beyond it are still judged:
/// their hints are asked of the inner server's `get_tool` on every call instead of cached.
pub const MAX_REGISTERED_TOOLS: usize = 10_000;

/// What a tool declares: its hints, and its action metadata if any.
type Declared = (DeclaredHints, Option<ActionMetadata>);

/// Tool name → declared hints and action metadata, bounded by [`MAX_REGISTERED_TOOLS`].
#[derive(Debug, Default)]
pub(crate) struct Registry {
    tools: RwLock<HashMap<Arc<str>, Declared>>,
}

impl Registry {
    /// The registry's own name of `tool` (shared: no copy) and its cached hints, if it has
    /// been seen.
    pub(crate) fn entry(&self, tool: &str) -> Option<(Arc<str>, DeclaredHints)> {
        self.tools
            .read()
            .get_key_value(tool)
            .map(|(name, (hints, _))| (name.clone(), *hints))
    }

    /// The cached action metadata of `tool`; `None` when it declares none or is not cached.
    pub(crate) fn action(&self, tool: &str) -> Option<ActionMetadata> {
        self.tools.read().get(tool).and_then(|(_, action)| *action)
    }

    pub(crate) fn contains(&self, tool: &str) -> bool {
        self.tools.read().contains_key(tool)
    }

    /// Caches `hints` and `action` for `tool`, replacing earlier ones. Ignored when the
    /// registry is full and `tool` is new.
    pub(crate) fn insert(&self, tool: &str, hints: DeclaredHints, action: Option<ActionMetadata>) {
        let mut tools = self.tools.write();
        if let Some(slot) = tools.get_mut(tool) {
            *slot = (hints, action);
        } else if tools.len() < MAX_REGISTERED_TOOLS {
            tools.insert(Arc::from(tool), (hints, action));
        }
    }

    /// Reads `tool`'s hints and action metadata and caches them; returns the hints.
    pub(crate) fn learn(&self, tool: &Tool) -> DeclaredHints {
        let hints = hints_of(tool);
        self.insert(&tool.name, hints, action_of(tool));
        hints
    }

    /// Every cached tool with its hints, sorted by name.
    pub(crate) fn snapshot(&self) -> Vec<(String, DeclaredHints)> {
        let mut all: Vec<(String, DeclaredHints)> = self
            .tools
            .read()
            .iter()
            .map(|(name, (hints, _))| (name.to_string(), *hints))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

/// The declared hints of an rmcp [`Tool`], read from its `annotations` as they serialize on the
/// wire (MCP schema `ToolAnnotations`). Should serialization ever fail, the typed fields are
/// read instead.
pub(crate) fn hints_of(tool: &Tool) -> DeclaredHints {
    let Some(annotations) = tool.annotations.as_ref() else {
        return DeclaredHints::default();
    };
    match serde_json::to_value(annotations) {
        Ok(json) => DeclaredHints::from_annotations_json(Some(&json)),
        Err(_) => DeclaredHints {
            read_only: annotations.read_only_hint,
            destructive: annotations.destructive_hint,
            idempotent: annotations.idempotent_hint,
            open_world: annotations.open_world_hint,
        },
    }
}

/// The action metadata of an rmcp [`Tool`], from its `_meta`, or from its `annotations` as
/// they serialize (should rmcp ever keep the draft's key there); `None` when it declares none.
pub(crate) fn action_of(tool: &Tool) -> Option<ActionMetadata> {
    let in_meta = tool
        .meta
        .as_ref()
        .and_then(|m| m.0.get(ACTION_METADATA_KEY))
        .filter(|a| a.is_object());
    if let Some(object) = in_meta {
        return Some(ActionMetadata::from_json(object));
    }
    let annotations = tool
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok());
    ActionMetadata::from_tool_json(None, annotations.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ToolAnnotations;

    fn tool(name: &'static str, annotations: Option<ToolAnnotations>) -> Tool {
        let mut tool = Tool::new(name, "test", Arc::new(serde_json::Map::new()));
        tool.annotations = annotations;
        tool
    }

    #[test]
    fn hints_are_tri_state() {
        let rows = [
            (None, DeclaredHints::default()),
            (Some(ToolAnnotations::new()), DeclaredHints::default()),
            (
                Some(ToolAnnotations::new().read_only(true).open_world(false)),
                DeclaredHints {
                    read_only: Some(true),
                    open_world: Some(false),
                    ..Default::default()
                },
            ),
            (
                Some(ToolAnnotations::from_raw(
                    None,
                    Some(false),
                    None,
                    Some(true),
                    None,
                )),
                DeclaredHints {
                    read_only: Some(false),
                    idempotent: Some(true),
                    ..Default::default()
                },
            ),
        ];
        for (annotations, want) in rows {
            assert_eq!(
                hints_of(&tool("t", annotations.clone())),
                want,
                "{annotations:?}"
            );
        }
    }

    /// Action metadata is read from `_meta` (rmcp's `ToolAnnotations` drops the key the
    /// draft puts in `annotations`), cached beside the hints, and absent when not declared.
    #[test]
    fn action_metadata_is_read_from_meta_and_cached() {
        use hintaudit_core::{ActionOutcome, InputDestination};
        let mut declaring = tool("a", Some(ToolAnnotations::new().read_only(true)));
        let mut meta = rmcp::model::MetaObject::new();
        meta.0.insert(
            ACTION_METADATA_KEY.to_owned(),
            serde_json::json!({"outcome": "Benign", "inputMetadata": {"destination": "x"}}),
        );
        declaring.meta = Some(meta);
        let want = ActionMetadata {
            outcome: Some(ActionOutcome::Benign),
            destination: Some(InputDestination::Other),
        };
        assert_eq!(action_of(&declaring), Some(want));
        assert_eq!(action_of(&tool("b", None)), None);
        let registry = Registry::default();
        registry.learn(&declaring);
        registry.learn(&tool("b", None));
        assert_eq!(registry.action("a"), Some(want));
        assert_eq!(registry.action("b"), None);
    }

    #[test]
    fn registry_learns_replaces_and_is_bounded() {
        let registry = Registry::default();
        assert_eq!(registry.entry("a"), None);
        let hints = registry.learn(&tool("a", Some(ToolAnnotations::new().read_only(true))));
        assert_eq!(hints.read_only, Some(true));
        let (name, got) = registry.entry("a").expect("learned");
        assert_eq!((&*name, got), ("a", hints));
        registry.insert("a", DeclaredHints::default(), None);
        // Replaced in place: the same shared name.
        let (again, got) = registry.entry("a").expect("still there");
        assert_eq!(got, DeclaredHints::default());
        assert!(Arc::ptr_eq(&name, &again));

        for i in 0..MAX_REGISTERED_TOOLS + 5 {
            registry.insert(&format!("t{i}"), DeclaredHints::default(), None);
        }
        assert_eq!(registry.snapshot().len(), MAX_REGISTERED_TOOLS);
        assert!(registry.contains("a"), "existing entries stay");
        assert!(!registry.contains(&format!("t{}", MAX_REGISTERED_TOOLS + 4)));
    }
}
