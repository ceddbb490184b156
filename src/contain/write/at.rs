//! File operations relative to a folder opened once (Unix): each name is looked up in that open folder,
//! never by a path walked again, so a folder swapped for a link after it was opened cannot redirect them.
//! Every lookup refuses to follow a link at the name (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`); only `rename`
//! acts on a link there, replacing the name and never what it points at.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// What stands at a name, as `lstat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A symbolic link, dangling or not.
    Link,
    /// A folder.
    Folder,
    /// A regular file, with its permission bits.
    File(u32),
    /// Anything else, in words (`a fifo`, `a socket`, `a device`).
    Other(&'static str),
}

/// An open folder.
#[derive(Debug)]
pub struct Dir(OwnedFd);

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn checked(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

impl Dir {
    /// Opens the folder at `path` (a link there is followed: the folder a user names is theirs to choose).
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(path)?;
        Ok(Self(file.into()))
    }

    /// Opens the folder `name` in this one; a link there fails (`ELOOP`, or `ENOTDIR` on some systems).
    pub fn open_below(&self, name: &OsStr) -> io::Result<Self> {
        let name = c_name(name)?;
        // SAFETY: the folder's descriptor is open for `self`'s life and `name` is a NUL-terminated string.
        let fd = checked(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `openat` succeeded, so `fd` is a fresh descriptor that nothing else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the folder `name` in this one (`mkdirat` never follows a link; an existing name fails).
    pub fn make_dir(&self, name: &OsStr) -> io::Result<()> {
        let name = c_name(name)?;
        // SAFETY: as in `open_below`.
        checked(unsafe { libc::mkdirat(self.0.as_raw_fd(), name.as_ptr(), 0o777) }).map(drop)
    }

    /// What stands at `name`, the link itself when it is one; `None` when nothing does.
    #[allow(
        clippy::useless_conversion,
        reason = "`mode_t` is narrower than `u32` on some systems"
    )]
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        let name = c_name(name)?;
        let mut stat = std::mem::MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: as in `open_below`; `stat` is writable and sized for `fstatat`.
        let result = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if let Err(error) = checked(result) {
            return match error.kind() {
                io::ErrorKind::NotFound => Ok(None),
                _ => Err(error),
            };
        }
        // SAFETY: `fstatat` succeeded, so it filled `stat`.
        let mode = unsafe { stat.assume_init() }.st_mode;
        Ok(Some(match mode & libc::S_IFMT {
            libc::S_IFLNK => Kind::Link,
            libc::S_IFDIR => Kind::Folder,
            libc::S_IFREG => Kind::File(u32::from(mode & 0o7777)),
            libc::S_IFIFO => Kind::Other("a fifo"),
            libc::S_IFSOCK => Kind::Other("a socket"),
            libc::S_IFBLK | libc::S_IFCHR => Kind::Other("a device"),
            _ => Kind::Other("not a regular file"),
        }))
    }

    /// Creates the file `name` for writing, exclusively and without following a link:
    /// `O_CREAT | O_EXCL | O_NOFOLLOW`, so anything already there, a link included, makes it fail.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let name = c_name(name)?;
        // SAFETY: as in `open_below`.
        let fd = checked(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: `openat` succeeded, so `fd` is a fresh descriptor that nothing else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Renames `from` to `to`, both in this folder: `to` is replaced whatever it is, a link included,
    /// and what a link there points at is never touched.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        let fd = self.0.as_raw_fd();
        // SAFETY: as in `open_below`, for both names.
        checked(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) }).map(drop)
    }

    /// Removes the file `name` (a link there is removed, not followed).
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let name = c_name(name)?;
        // SAFETY: as in `open_below`.
        checked(unsafe { libc::unlinkat(self.0.as_raw_fd(), name.as_ptr(), 0) }).map(drop)
    }
}
