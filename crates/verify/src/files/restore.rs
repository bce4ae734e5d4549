//! Putting the watched trees back as a snapshot saw them, from the content store.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::tree::{Entry, Kind, TreeSnapshot, Trees};

impl Trees {
    /// Makes every root hold what `to` holds: paths it does not hold are removed, and every
    /// file, directory and symbolic link it holds is put back with its content and mode
    /// (through a temporary file and a rename), unless it is there already. Modification
    /// times are not restored. Returns how many paths were removed or written. Errors: a
    /// path that cannot be removed or written (what was done before stays done).
    pub fn restore(&mut self, to: &TreeSnapshot) -> io::Result<usize> {
        let now = self.take(Some(to))?;
        let mut touched = 0;
        for (i, want) in to.roots.iter().enumerate() {
            let root = self.roots()[i].clone();
            let have = now.roots.get(i).cloned().unwrap_or_default();
            touched += remove_extra(&root, &have, want)?;
            touched += self.put_back(&root, &have, want)?;
        }
        Ok(touched)
    }

    /// Writes every path of `want` that `have` lacks or holds otherwise.
    fn put_back(
        &self,
        root: &Path,
        have: &BTreeMap<String, Entry>,
        want: &BTreeMap<String, Entry>,
    ) -> io::Result<usize> {
        let mut touched = 0;
        // Parents sort before their children (`a` < `a/b`).
        for (rel, entry) in want {
            let path = root.join(rel);
            let same = have
                .get(rel)
                .is_some_and(|h| h.kind == entry.kind && h.mode == entry.mode);
            if same {
                continue;
            }
            touched += 1;
            match entry.kind {
                Kind::Dir => {
                    if !path.is_dir() {
                        fs::create_dir(&path)?;
                    }
                    // Searchable and writable while its children are put back.
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o700))?;
                }
                Kind::File { hash, .. } => {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    let tmp = path
                        .parent()
                        .unwrap_or(root)
                        .join(format!(".{name}.hintaudit-restore"));
                    fs::copy(self.object(hash), &tmp)?;
                    fs::set_permissions(&tmp, fs::Permissions::from_mode(entry.mode))?;
                    fs::rename(&tmp, &path)?;
                }
                Kind::Symlink { hash } => {
                    let target = self.content(hash)?;
                    let target = std::ffi::OsString::from_vec(target);
                    if path.symlink_metadata().is_ok() {
                        fs::remove_file(&path)?;
                    }
                    std::os::unix::fs::symlink(target, &path)?;
                }
            }
        }
        // Directories' own modes last, deepest first, so a read-only directory is made so
        // after its children are in place.
        for (rel, entry) in want.iter().rev() {
            if entry.kind == Kind::Dir {
                fs::set_permissions(root.join(rel), fs::Permissions::from_mode(entry.mode))?;
            }
        }
        Ok(touched)
    }
}

/// Removes, deepest first, every path of `have` that `want` lacks or holds as another kind.
fn remove_extra(
    root: &Path,
    have: &BTreeMap<String, Entry>,
    want: &BTreeMap<String, Entry>,
) -> io::Result<usize> {
    let mut touched = 0;
    for (rel, entry) in have.iter().rev() {
        let keep = want.get(rel).is_some_and(|w| {
            std::mem::discriminant(&w.kind) == std::mem::discriminant(&entry.kind)
        });
        if keep {
            continue;
        }
        let path = root.join(rel);
        let result = match entry.kind {
            Kind::Dir => fs::remove_dir_all(&path),
            _ => fs::remove_file(&path),
        };
        match result {
            Ok(()) => touched += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(touched)
}
