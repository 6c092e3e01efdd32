//! Folders and files only the server's own user may read (0700 and 0600): the data dir holds password hashes,
//! two-factor secrets, session hashes and mailed reset links.

use std::{io, path::Path};

/// Creates `dir` (and its parents) for the owner alone, and takes access from everyone else if it existed.
pub fn dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Creates `file` empty for the owner alone when it does not exist; takes access from everyone else if it does.
pub fn file(file: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        options.open(file)?;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    options.open(file).map(drop)
}

/// Takes access from everyone but the owner, when `file` exists.
pub fn restrict(file: &Path) -> io::Result<()> {
    match file.try_exists()? {
        true => self::file(file),
        false => Ok(()),
    }
}

/// Writes a new file `path` that only the owner may read.
pub async fn write(path: &Path, contents: &[u8]) -> io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut f = options.open(path).await?;
    f.write_all(contents).await?;
    f.sync_all().await
}
