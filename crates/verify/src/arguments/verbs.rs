//! What a tool's name says it does: its verb.

/// The first word of a tool's name, lowercased (`create` for `create_note`, `createNote` or
/// `create-note`): the verb that says what the tool does to what it names.
pub(crate) fn name_verb(tool: &str) -> String {
    name_words(tool).into_iter().next().unwrap_or_default()
}

/// The words of a tool's name, lowercased: `git_create_branch`, `gitCreateBranch` and
/// `git-create-branch` are `git`, `create`, `branch`.
fn name_words(tool: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for c in tool.chars() {
        let boundary = c == '_' || c == '-' || c == '.' || c.is_ascii_uppercase();
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c != '_' && c != '-' && c != '.' {
            word.push(c.to_ascii_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// What a tool's name says it does to what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolVerb {
    /// `create`, `add`, `insert`, `new`, `register`, `save`, `write`, `put`, `make`,
    /// `upload`, `mkdir`, `append`, `store`.
    Create,
    /// `delete`, `remove`, `drop`, `destroy`, `purge`, `erase`, `unlink`, `rm`, `clear`.
    Delete,
}

/// The verb of a tool's name: its first word that is a creating or deleting verb
/// (`git_create_branch` creates; `delete_entities` deletes), `None` when no word is.
pub(crate) fn tool_verb(tool: &str) -> Option<ToolVerb> {
    name_words(tool).iter().find_map(|w| match w.as_str() {
        "create" | "add" | "insert" | "new" | "register" | "save" | "write" | "put" | "make"
        | "upload" | "mkdir" | "append" | "store" => Some(ToolVerb::Create),
        "delete" | "remove" | "drop" | "destroy" | "purge" | "erase" | "unlink" | "rm"
        | "clear" => Some(ToolVerb::Delete),
        _ => None,
    })
}
