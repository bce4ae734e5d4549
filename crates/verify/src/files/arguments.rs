//! Generated values for path-like arguments, drawn from the watched trees as id-like fields
//! are drawn from the database.
//!
//! A string property is path-like by its name (`path`, `file`, `filename`, `file_path`,
//! `dir`, `directory`, `folder`, `source`, `destination`, `uri`, and names ending so, in
//! snake or camel case); an array of strings named `paths` or `files` takes one path. Each
//! gets an absolute path under the first watched root:
//!
//! - a destination (`destination`, `dest`, `target`, `to`, `new_path`, `output`): a path
//!   that does not exist yet;
//! - a directory (`dir`, `directory`, `folder`, `root`): the root itself;
//! - any other path: an existing file (the first, by name, outside `ignored_paths`, git
//!   directories and SQLite databases) and a new path, each in a call of its own (a save can be additive on a new
//!   path and destructive on an existing one).
//!
//! A later attempt, for a tool none of whose calls ran, tries the root directory for those
//! fields. A `uri` gets a `file://` URI.

use serde_json::{Map, Value, json};

use super::tree::{Kind, TreeSnapshot, Trees};

/// How many sets of path values a tool is tried with, at most.
pub(crate) const PATH_ATTEMPTS: usize = 3;

/// One set of values for a tool's path-like fields, by name, and where each came from (for
/// reports).
pub(crate) type PathValues = (Map<String, Value>, Vec<(String, String)>);

/// What a path-like field is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathRole {
    /// A path to read or change: an existing file first.
    Existing,
    /// A directory: the root.
    Dir,
    /// Where something goes: a path that does not exist.
    New,
}

/// A path-like field of a tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathField {
    /// The property name.
    pub name: String,
    /// What it is for.
    pub role: PathRole,
    /// Whether it takes an array of paths.
    pub many: bool,
    /// Whether it takes a URI (`file://…`).
    pub uri: bool,
}

/// The path field a property is, if it is one: by name, for a string (or an array of
/// strings named in the plural).
pub(crate) fn path_field(name: &str, schema: &Value) -> Option<PathField> {
    let key: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    let ty = schema.get("type").and_then(Value::as_str);
    let items = schema.pointer("/items/type").and_then(Value::as_str);
    let many = ty == Some("array") && items == Some("string");
    if many {
        return matches!(key.as_str(), "paths" | "files" | "filepaths" | "filenames").then(|| {
            PathField {
                name: name.to_owned(),
                role: PathRole::Existing,
                many: true,
                uri: false,
            }
        });
    }
    if ty != Some("string") {
        return None;
    }
    let new = [
        "destination",
        "dest",
        "target",
        "to",
        "output",
        "newpath",
        "newname",
    ];
    let dir = ["dir", "directory", "folder", "root"];
    let path = ["path", "file", "filename", "source", "src", "from", "uri"];
    let role = if new
        .iter()
        .any(|n| key == *n || key.starts_with(n) && key.ends_with("path"))
    {
        PathRole::New
    } else if dir.iter().any(|n| key == *n || key.ends_with(n)) {
        PathRole::Dir
    } else if path.iter().any(|n| key == *n || key.ends_with(n)) {
        PathRole::Existing
    } else {
        return None;
    };
    Some(PathField {
        name: name.to_owned(),
        role,
        many: false,
        uri: key.ends_with("uri"),
    })
}

/// The sets of path values to try for `fields` of a tool, in order: an existing file (the
/// first by name outside `ignored_paths`, git directories and SQLite databases; a new path
/// when there is
/// none), a new path, then the watched directory. Each with where its values came from, for
/// reports. Empty when there is no field or nothing is watched. Every tool gets the same
/// sets (`_tool`: what its name says no longer decides which path comes first).
pub(crate) fn path_values(
    trees: &Trees,
    snapshot: &TreeSnapshot,
    _tool: &str,
    fields: &[PathField],
) -> Vec<PathValues> {
    let (Some(root), Some(entries)) = (trees.roots().first(), snapshot.roots.first()) else {
        return Vec::new();
    };
    if fields.is_empty() {
        return Vec::new();
    }
    // A git directory's files and a SQLite database (with its -wal, -shm, -journal) are
    // state of their own kind, not a file a tool is handed.
    let user_file = |p: &str, hash: u128| {
        !trees.is_ignored(p)
            && !p.split('/').any(|c| c == ".git")
            && hintaudit_core::files::sqlite_companion(p).is_none()
            && !trees
                .content(hash)
                .is_ok_and(|c| hintaudit_core::files::is_sqlite(&c))
    };
    let file = entries
        .iter()
        .find(|(p, e)| matches!(e.kind, Kind::File { hash, .. } if user_file(p, hash)))
        .map(|(p, _)| root.join(p));
    let fresh = |n: usize| {
        (n..)
            .map(|i| root.join(format!("hintaudit-new-{i}.txt")))
            .find(|p| !entries.contains_key(&relative(root, p)))
            .unwrap_or_else(|| root.join("hintaudit-new.txt"))
    };
    let existing = match &file {
        Some(f) => (f.clone(), "an existing file of the watched tree"),
        None => (fresh(1), "a new path in the watched tree"),
    };
    let attempts = [
        existing,
        (fresh(1), "a new path in the watched tree"),
        (root.clone(), "the watched directory"),
    ];
    attempts
        .iter()
        .take(PATH_ATTEMPTS)
        .map(|(existing, what)| {
            let mut values = Map::new();
            let mut sources = Vec::new();
            for f in fields {
                let (path, source) = match f.role {
                    PathRole::Existing => (existing.clone(), *what),
                    PathRole::Dir => (root.clone(), "the watched directory"),
                    PathRole::New => (fresh(2), "a new path in the watched tree"),
                };
                let text = path.to_string_lossy().into_owned();
                let text = if f.uri {
                    format!("file://{text}")
                } else {
                    text
                };
                let value = if f.many { json!([text]) } else { json!(text) };
                values.insert(f.name.clone(), value);
                sources.push((f.name.clone(), source.to_owned()));
            }
            (values, sources)
        })
        .collect()
}

fn relative(root: &std::path::Path, p: &std::path::Path) -> String {
    p.strip_prefix(root)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_fields_by_name_and_type() {
        let s = json!({"type": "string"});
        let cases = [
            ("path", s.clone(), Some(PathRole::Existing)),
            ("filePath", s.clone(), Some(PathRole::Existing)),
            ("source", s.clone(), Some(PathRole::Existing)),
            ("destination", s.clone(), Some(PathRole::New)),
            ("new_path", s.clone(), Some(PathRole::New)),
            ("directory", s.clone(), Some(PathRole::Dir)),
            ("output_dir", s.clone(), Some(PathRole::Dir)),
            ("resource_uri", s.clone(), Some(PathRole::Existing)),
            (
                "paths",
                json!({"type": "array", "items": {"type": "string"}}),
                Some(PathRole::Existing),
            ),
            ("path", json!({"type": "integer"}), None),
            ("content", s.clone(), None),
            ("pattern", s.clone(), None),
        ];
        for (name, schema, want) in cases {
            assert_eq!(path_field(name, &schema).map(|f| f.role), want, "{name}");
        }
    }

    #[test]
    fn values_come_from_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "b").unwrap();
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        std::fs::write(dir.path().join("cache/a"), "a").unwrap();
        let mut trees = Trees::new(&[dir.path().to_path_buf()], &["cache".into()]).unwrap();
        let snap = trees.take(None).unwrap();
        let root = trees.roots()[0].clone();
        let s = json!({"type": "string"});
        let fields = vec![
            path_field("source", &s).unwrap(),
            path_field("destination", &s).unwrap(),
        ];
        let sets = path_values(&trees, &snap, "move_file", &fields);
        assert_eq!(sets.len(), 3);
        let path = |k: usize, f: &str| sets[k].0[f].as_str().unwrap().to_owned();
        assert_eq!(path(0, "source"), root.join("b.txt").to_string_lossy());
        assert_eq!(
            path(0, "destination"),
            root.join("hintaudit-new-2.txt").to_string_lossy()
        );
        assert_eq!(
            path(1, "source"),
            root.join("hintaudit-new-1.txt").to_string_lossy()
        );
        assert_eq!(path(2, "source"), root.to_string_lossy());
        // Files of a git directory are not the user's.
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/COMMIT_EDITMSG"), "m").unwrap();
        std::fs::remove_file(dir.path().join("b.txt")).unwrap();
        std::fs::write(dir.path().join("c.txt"), "c").unwrap();
        let snap = trees.take(None).unwrap();
        let sets = path_values(&trees, &snap, "write_file", &fields[..1]);
        assert_eq!(sets[0].0["source"], json!(root.join("c.txt")));
    }
}
