//! `ignored_paths`: globs of paths whose changes are bookkeeping.

use globset::{GlobSet, GlobSetBuilder};

/// The `ignored_paths` globs, matched against paths relative to their root: `*` stays
/// within one component, `**` crosses them; a path under a matched directory is ignored
/// too, and a directory every name in which would be (`cache/**` covers `cache`).
#[derive(Debug, Clone, Default)]
pub struct IgnoredPaths {
    set: GlobSet,
}

impl IgnoredPaths {
    /// Compiles `globs`. Errors: a glob that does not parse, as `ignored_paths: …`.
    pub fn new(globs: &[String]) -> Result<IgnoredPaths, String> {
        let mut set = GlobSetBuilder::new();
        for g in globs {
            let glob = globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("ignored_paths: {e}"))?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| format!("ignored_paths: {e}"))?;
        Ok(IgnoredPaths { set })
    }

    /// Whether `path` (relative to its root, `/`-separated) is bookkeeping.
    pub fn is_ignored(&self, path: &str) -> bool {
        if self.set.is_empty() {
            return false;
        }
        let ancestors = path
            .char_indices()
            .filter(|(_, c)| *c == '/')
            .map(|(i, _)| &path[..i]);
        // A name no real path has: only a wildcard component matches it.
        let any_child = format!("{path}/\u{0}");
        ancestors
            .chain([path, any_child.as_str()])
            .any(|p| self.set.is_match(p))
    }
}
