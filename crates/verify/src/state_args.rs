//! Arguments drawn from the state in the watched trees, as a user's session would pass
//! them: a git repository's work tree, branches, revisions and changed paths; the names and
//! values JSON and JSONL documents hold (several fields of one object from one record); a
//! new value beside each existing one for a field that names state.
//!
//! Values are the server's data: they go into the calls, never into a report, which says
//! where each argument came from (`a branch of the git repository`, `a value of field
//! name in the watched JSON documents`).

use std::path::{Path, PathBuf};

use hintaudit_state::{GitValues, JsonValues, RepoLocation, Repository};
use serde_json::{Map, Value, json};

use crate::client::ToolInfo;

/// The largest file read for its JSON values.
const JSON_MAX_BYTES: u64 = 1 << 20;
/// How many files are read for their JSON values, at most.
const JSON_FILES: usize = 200;

/// Which value a field that names state gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// A value the state holds: an existing branch, record name, path.
    Existing,
    /// A value it does not hold yet (`hintaudit-new-1`): a tool can be additive on new state
    /// and destructive on existing state.
    New,
}

/// What verify found in the watched trees before a tool, for its arguments.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    repos: Vec<GitValues>,
    json: JsonValues,
    /// SQLite database files, by header.
    pub sqlite: Vec<PathBuf>,
    /// What the tool met, as the report says it (no values).
    pub met: Vec<String>,
}

impl TreeState {
    /// Reads `roots`: the git repositories (by content), the JSON and JSONL documents (by
    /// content, files of at most 1 MiB outside git directories, at most 200), the SQLite
    /// files (by header). What cannot be read is left out.
    pub fn read(roots: &[PathBuf]) -> TreeState {
        let mut state = TreeState::default();
        for root in roots {
            state.read_repos(root);
            state.read_json(root);
            for db in hintaudit_state::find_sqlite_files(root) {
                state
                    .met
                    .push(format!("SQLite database {}", shown(root, &db)));
                state.sqlite.push(db);
            }
        }
        state
    }

    fn read_repos(&mut self, root: &Path) {
        for location in hintaudit_state::find_repositories(root) {
            let Ok(values) = Repository::open(&location).and_then(|r| r.values()) else {
                continue;
            };
            self.met.push(format!(
                "git repository {} ({} branches, {} commits read, {} modified files)",
                shown(root, &location.git_dir),
                values.branches.len(),
                values.commits.len(),
                values.modified.len()
            ));
            self.repos.push(values);
        }
    }

    fn read_json(&mut self, root: &Path) {
        let git_dirs: Vec<RepoLocation> = hintaudit_state::find_repositories(root);
        let files = walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter(|e| !git_dirs.iter().any(|g| e.path().starts_with(&g.git_dir)))
            .filter(|e| e.metadata().is_ok_and(|m| m.len() <= JSON_MAX_BYTES))
            .take(JSON_FILES);
        for file in files {
            let Some(values) = std::fs::read(file.path())
                .ok()
                .and_then(|c| hintaudit_state::json_values(&c))
            else {
                continue;
            };
            self.met.push(format!(
                "JSON document {} ({} objects)",
                shown(root, file.path()),
                values.records.len()
            ));
            self.json.extend(values);
        }
    }

    /// Fills the arguments of `args` (generated for `tool` from `schema`) that the state
    /// has values for, as `variant` says; each filled field leaves `made_up` and gets its
    /// source in `sources`. Returns whether a filled field names state (a branch, a
    /// record's name or id, a path in a repository), which makes the new variant worth a
    /// call of its own.
    pub fn fill(
        &self,
        args: &mut Map<String, Value>,
        tool: &ToolInfo,
        variant: Variant,
        sources: &mut Vec<(String, String)>,
        made_up: &mut Vec<String>,
    ) -> bool {
        let root = &tool.input_schema;
        let mut filler = Filler {
            state: self,
            repo: self.repo_for(tool),
            variant,
            root,
            names_state: false,
            filled: Vec::new(),
        };
        filler.object(args, root);
        for (name, source) in filler.filled {
            made_up.retain(|m| *m != name);
            sources.retain(|(n, _)| *n != name);
            sources.push((name, source));
        }
        filler.names_state
    }

    /// The repository a tool works on: the first one found, when the tool takes a
    /// repository path or its name says git.
    fn repo_for(&self, tool: &ToolInfo) -> Option<&GitValues> {
        let props = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let takes_repo = props.is_some_and(|p| p.keys().any(|k| field_kind(k) == Some(Kind::Repo)));
        let says_git = tool.name.to_ascii_lowercase().contains("git");
        (takes_repo || says_git)
            .then(|| self.repos.first())
            .flatten()
    }
}

/// How a field is filled from a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The repository's work tree.
    Repo,
    /// A branch to act on (an existing one, or a new name).
    Branch,
    /// A branch to start from: the current one.
    Base,
    /// A revision: a commit of the repository.
    Revision,
    /// Paths in the work tree (relative): a modified file, or a new name.
    Paths,
}

/// The repository kind of a field, by its name (lowercase, `_` and `-` dropped).
fn field_kind(name: &str) -> Option<Kind> {
    let key: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    Some(match key.as_str() {
        "repo" | "repopath" | "repository" | "repositorypath" | "repodir" | "repositorydir" => {
            Kind::Repo
        }
        "basebranch" | "base" | "startpoint" | "frombranch" => Kind::Base,
        // `branch_type` says which branches, not one branch.
        k if k.contains("branch") && !k.ends_with("type") && !k.ends_with("kind") => Kind::Branch,
        "revision" | "rev" | "ref" | "commit" | "sha" | "commitsha" | "target" | "treeish"
        | "commitish" | "contains" | "notcontains" => Kind::Revision,
        "files" | "paths" | "filepaths" | "file" | "path" | "filepath" => Kind::Paths,
        _ => return None,
    })
}

/// Whether a field's name says it names a record (`name`, `entityName`, `id`, `key`…).
fn names_record(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "name", "names", "id", "ids", "key", "keys", "uuid", "slug", "title",
    ]
    .iter()
    .any(|s| lower == *s || lower.ends_with(s))
}

/// A fill in progress over one tool's arguments.
struct Filler<'s> {
    state: &'s TreeState,
    repo: Option<&'s GitValues>,
    variant: Variant,
    root: &'s Value,
    names_state: bool,
    filled: Vec<(String, String)>,
}

impl Filler<'_> {
    /// Fills an object's members (the arguments, or an item of an array of objects): from
    /// the repository by name, then from one JSON record matching the most members.
    fn object(&mut self, args: &mut Map<String, Value>, schema: &Value) {
        let props = resolve(self.root, schema)
            .get("properties")
            .and_then(Value::as_object);
        let members: Vec<String> = args.keys().cloned().collect();
        let record = record_for(&self.state.json, &members);
        for (name, value) in args.iter_mut() {
            let prop = props
                .and_then(|p| p.get(name))
                .map(|p| resolve(self.root, p))
                .unwrap_or(&Value::Null);
            if self.repo_value(name, value) {
                continue;
            }
            match value {
                Value::Object(inner) => self.object(inner, prop),
                Value::Array(items) => self.array(name, items, prop, record),
                leaf => self.leaf(name, leaf, record),
            }
        }
    }

    fn array(
        &mut self,
        name: &str,
        items: &mut [Value],
        prop: &Value,
        record: Option<&JsonRecord>,
    ) {
        let item_schema = prop.get("items").map(|i| resolve(self.root, i));
        for item in items.iter_mut() {
            match item {
                Value::Object(inner) => self.object(inner, item_schema.unwrap_or(&Value::Null)),
                leaf => self.leaf(name, leaf, record),
            }
        }
    }

    /// A scalar field: from the record chosen for its object, else from any document's
    /// field of the same name (or whose name ends the field's: `entityName` ← `name`).
    fn leaf(&mut self, name: &str, value: &mut Value, record: Option<&JsonRecord>) {
        let json = &self.state.json;
        let Some(field) = json_field(json, name).or_else(|| json_field(json, &singular(name)))
        else {
            return;
        };
        let names = names_record(name);
        let existing = record
            .and_then(|r| r.get(&field))
            .and_then(|v| v.first())
            .or_else(|| self.state.json.fields.get(&field).and_then(|v| v.first()));
        let Some(existing) = existing else { return };
        if names {
            self.names_state = true;
        }
        let (v, source) = match (self.variant, names) {
            (Variant::New, true) => (
                json!("hintaudit-new-1"),
                "a new name (not in the watched JSON documents)".to_owned(),
            ),
            _ => (
                existing.clone(),
                format!("a value of field {field} in the watched JSON documents"),
            ),
        };
        if v.is_string() == value.is_string() || value.is_null() {
            *value = v;
            self.filled.push((name.to_owned(), source));
        }
    }

    /// A field the repository fills; true when it did.
    fn repo_value(&mut self, name: &str, value: &mut Value) -> bool {
        let (Some(repo), Some(kind)) = (self.repo, field_kind(name)) else {
            return false;
        };
        let new = self.variant == Variant::New;
        let (v, source, names_state): (Value, &str, bool) = match kind {
            Kind::Repo => match &repo.work_tree {
                Some(w) => (
                    json!(w.to_string_lossy()),
                    "the git repository's work tree",
                    false,
                ),
                None => return false,
            },
            Kind::Branch if new => (json!("hintaudit-new-1"), "a new branch name", true),
            Kind::Branch => match other_branch(repo) {
                Some(b) => (json!(b), "a branch of the git repository", true),
                None => return false,
            },
            Kind::Base => match &repo.current_branch {
                Some(b) => (json!(b), "the git repository's current branch", false),
                None => return false,
            },
            Kind::Revision => match repo.commits.first() {
                Some(c) => (json!(c), "a commit of the git repository", false),
                None => return false,
            },
            Kind::Paths if new => (
                json!("hintaudit-new-1.txt"),
                "a new path in the git work tree",
                true,
            ),
            Kind::Paths => match repo.modified.first().or(repo.tracked.first()) {
                Some(p) => (json!(p), "a changed file of the git work tree", true),
                None => return false,
            },
        };
        self.names_state |= names_state;
        *value = match value {
            Value::Array(_) => Value::Array(vec![v]),
            _ => v,
        };
        self.filled.push((name.to_owned(), source.to_owned()));
        true
    }
}

type JsonRecord = std::collections::BTreeMap<String, Vec<Value>>;

/// A branch to act on: the first that is not the current one and that verify did not make
/// (`hintaudit-new-*`), else the current one.
fn other_branch(repo: &GitValues) -> Option<&String> {
    let made = |b: &&String| b.starts_with("hintaudit-new-");
    let current = repo.current_branch.as_ref();
    repo.branches
        .iter()
        .find(|b| Some(*b) != current && !made(b))
        .or(repo.branches.first())
}

/// The documents' field a field name takes its values from: the same name, else the
/// longest field name that ends it (case-insensitive: `entityName` ← `name`).
fn json_field(json: &JsonValues, name: &str) -> Option<String> {
    if json.fields.contains_key(name) {
        return Some(name.to_owned());
    }
    let lower = name.to_ascii_lowercase();
    json.fields
        .keys()
        .filter(|f| f.len() >= 2 && lower.ends_with(&f.to_ascii_lowercase()))
        .max_by_key(|f| f.len())
        .cloned()
}

/// The record (an object of the documents) holding the most of `members`' fields (array
/// members by their singular too), the first such; `None` when none holds one.
fn record_for<'j>(json: &'j JsonValues, members: &[String]) -> Option<&'j JsonRecord> {
    let fields: Vec<String> = members
        .iter()
        .filter_map(|m| json_field(json, m).or_else(|| json_field(json, &singular(m))))
        .collect();
    let held = |r: &JsonRecord| fields.iter().filter(|f| r.contains_key(*f)).count();
    let best = json.records.iter().map(held).max().filter(|n| *n > 0)?;
    json.records.iter().find(|r| held(r) == best)
}

/// `entity` for `entities`, `name` for `names`.
fn singular(name: &str) -> String {
    name.strip_suffix("ies")
        .map(|s| format!("{s}y"))
        .or_else(|| name.strip_suffix('s').map(str::to_owned))
        .unwrap_or_else(|| name.to_owned())
}

/// A local `$ref` resolved against the root schema, and `anyOf`/`oneOf`'s first non-null
/// branch (pydantic's `Optional`).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    crate::arguments::resolve(root, schema)
}

/// A path as the report shows it: relative to its watched root.
fn shown(root: &Path, path: &Path) -> String {
    match hintaudit_core::files::relative(root, path) {
        r if r.is_empty() => ".".to_owned(),
        r => r,
    }
}
