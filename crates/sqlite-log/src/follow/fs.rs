//! What the follower refuses before it opens anything: a database on a network filesystem
//! (SQLite's WAL index is shared memory, coherent on one host and kernel only), and a
//! directory it may not write (SQLite creates the `-shm` and `-wal` files beside the
//! database).

use std::path::{Path, PathBuf};

use crate::follow::FollowError;

/// Filesystem types of `/proc/self/mountinfo` that are remote, or FUSE filesystems that are.
const NETWORK: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "afs",
    "ceph",
    "glusterfs",
    "lustre",
    "gpfs",
    "fuse.sshfs",
    "fuse.glusterfs",
    "fuse.s3fs",
    "fuse.rclone",
    "fuse.gcsfuse",
    "davfs",
    "fuse.davfs2",
    "ocfs2",
    "gfs2",
];

/// Refuses `db`'s directory when it is on a network filesystem or not writable.
///
/// # Errors
/// [`FollowError::NetworkFilesystem`], [`FollowError::DirectoryNotWritable`],
/// [`FollowError::Io`] when the directory cannot be resolved.
pub(crate) fn check_directory(db: &Path) -> Result<PathBuf, FollowError> {
    let parent = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = parent.canonicalize().map_err(|source| FollowError::Io {
        path: parent.clone(),
        source,
    })?;
    if let Some(fstype) = filesystem_of(&dir).filter(|t| NETWORK.contains(&t.as_str())) {
        return Err(FollowError::NetworkFilesystem { path: dir, fstype });
    }
    if rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK).is_err() {
        return Err(FollowError::DirectoryNotWritable { dir });
    }
    Ok(dir)
}

/// The filesystem type of the mount holding `dir` (the longest mount point that is a prefix
/// of it), from `/proc/self/mountinfo`; `None` when that is not readable.
fn filesystem_of(dir: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_type(&info, dir)
}

/// The filesystem type `mountinfo` gives the mount holding `dir`.
fn mount_type(mountinfo: &str, dir: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        // "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
        let (left, right) = line.split_once(" - ")?;
        let point = unescape(left.split(' ').nth(4)?);
        let fstype = right.split(' ').next()?.to_owned();
        if dir.starts_with(&point) && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), fstype));
        }
    }
    best.map(|(_, t)| t)
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(char::from(c));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:40 / /srv/data rw shared:9 - nfs4 host:/export rw,vers=4.2
31 30 0:41 / /srv/data/local\\040disk rw shared:10 - ext4 /dev/sdb1 rw
32 22 0:42 / /home/me/remote rw shared:11 - fuse.sshfs me@host: rw
";

    #[test]
    fn the_mount_holding_a_directory_is_the_longest_prefix() {
        let cases = [
            ("/var/lib/app", Some("ext4")),
            ("/srv/data/app", Some("nfs4")),
            ("/srv/data/local disk/app", Some("ext4")),
            ("/home/me/remote/db", Some("fuse.sshfs")),
            ("/srv/database", Some("ext4")),
        ];
        for (dir, want) in cases {
            assert_eq!(
                mount_type(MOUNTINFO, Path::new(dir)).as_deref(),
                want,
                "{dir}"
            );
        }
    }

    #[test]
    fn a_directory_that_cannot_be_written_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        let db = ro.join("app.db");
        assert!(check_directory(&db).is_ok(), "a writable directory");
        let mut perms = std::fs::metadata(&ro).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
        std::fs::set_permissions(&ro, perms).unwrap();
        let got = check_directory(&db);
        let mut perms = std::fs::metadata(&ro).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&ro, perms).unwrap();
        let root =
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(dir.path()).unwrap()) == 0;
        if root {
            // root may write any directory: access(2) says so, and so does SQLite.
            eprintln!("skipped the refusal: running as root, every directory is writable");
            return;
        }
        match got {
            Err(FollowError::DirectoryNotWritable { dir }) => assert!(dir.ends_with("ro")),
            other => panic!("want DirectoryNotWritable, got {other:?}"),
        }
    }
}
