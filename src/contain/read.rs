//! Reading a file that must not be a link, with no window between a check and the read: the file is opened
//! with `O_NOFOLLOW` (on Unix), so a link swapped in after a check fails the open instead of being followed,
//! and what was opened is checked to be a regular file before a byte is read.

use std::io::Read as _;
use std::path::Path;

/// The bytes of the regular file at `path`, at most `limit` of them; a symbolic link at `path` (on Unix),
/// anything but a regular file, or a larger file is an error. A link is told by
/// [`is_link_refused`].
pub fn read_no_follow(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK: a FIFO there must not block the open; it is refused below.
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("it is larger than the {limit}-byte limit"),
        ));
    }
    Ok(bytes)
}

/// Whether `error`, from [`read_no_follow`], is its refusal of a symbolic link.
pub fn is_link_refused(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_within_its_limit() {
        let tree = tempfile::tempdir().expect("scratch");
        let path = tree.path().join("a.toml");
        std::fs::write(&path, "1234").expect("file");
        assert_eq!(read_no_follow(&path, 4).expect("read"), b"1234");
        let error = read_no_follow(&path, 3).expect_err("too large");
        assert!(error.to_string().contains("3-byte limit"), "{error}");
        assert!(!is_link_refused(&error));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_refused_not_followed() {
        let outside = tempfile::tempdir().expect("scratch");
        let tree = tempfile::tempdir().expect("scratch");
        let marker = outside.path().join("marker");
        std::fs::write(&marker, "secret").expect("marker");
        let link = tree.path().join("a.toml.pending");
        std::os::unix::fs::symlink(&marker, &link).expect("link");
        let error = read_no_follow(&link, 1024).expect_err("a link is refused");
        assert!(is_link_refused(&error), "{error:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_folder_is_refused_without_blocking() {
        let tree = tempfile::tempdir().expect("scratch");
        let fifo = tree.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        for path in [fifo, tree.path().to_path_buf()] {
            let error = read_no_follow(&path, 1024).expect_err("refused");
            assert!(!is_link_refused(&error), "{error:?}");
        }
    }
}
