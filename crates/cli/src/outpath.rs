//! Files a command writes where the user says (`iolab report -o`, and every other output path):
//! the rule `iolab run` follows for its targets. A file that exists is replaced only if iolab
//! wrote it (its ownership mark: the `user.iolab` xattr, or the directory's `.iolab-owned`
//! manifest), or with `--overwrite`; a link, a directory, a device, a FIFO or a socket is never
//! written through; a path that is one of the command's inputs (the results database it reads,
//! with its `-wal` and `-shm`) is refused even with `--overwrite`. What is written is marked as
//! iolab's, so the next run of the command may replace it.

use anyhow::{bail, Context, Result};
use iolab_engine::beneath::Beneath;
use iolab_engine::OpenOptions;
use iolab_workload::owned::{self, Found, Kind};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A file the user named for output, and what may be replaced there.
pub struct OutPath<'a> {
    pub path: &'a Path,
    /// What the flag is called, for errors (`-o`, `--out`).
    pub flag: &'static str,
    /// `--overwrite` was given.
    pub overwrite: bool,
    /// Files the command reads: never written, whatever the flags.
    pub inputs: Vec<PathBuf>,
}

/// The files beside an SQLite database that are part of it.
pub fn database_files(db: Option<&Path>) -> Vec<PathBuf> {
    let Some(db) = db else { return Vec::new() };
    let mut v = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        v.push(p.into());
    }
    v
}

impl OutPath<'_> {
    /// The directory and name, the directory opened beneath which the name is resolved (no
    /// link followed at the last step).
    fn place(&self) -> Result<(Beneath, PathBuf)> {
        let name = match self.path.file_name() {
            Some(n) if !self.path.as_os_str().as_encoded_bytes().ends_with(b"/") => PathBuf::from(n),
            _ => bail!(
                "{} {}: name a file (for example {}/report.html)",
                self.flag,
                self.path.display(),
                self.path.display()
            ),
        };
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.exists() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let b = Beneath::open(dir).with_context(|| format!("{} {}", self.flag, self.path.display()))?;
        Ok((b, name))
    }

    /// Refuse the path before any work: an input, something other than a regular file, or a
    /// file iolab did not write (without `--overwrite`). Returns what is there.
    pub fn check(&self) -> Result<Found> {
        let (b, name) = self.place()?;
        self.check_in(&b, &name)
    }

    fn check_in(&self, b: &Beneath, name: &Path) -> Result<Found> {
        let shown = self.path.display();
        if let Ok(meta) = std::fs::symlink_metadata(self.path) {
            for input in &self.inputs {
                if let Ok(i) = std::fs::metadata(input) {
                    if (i.dev(), i.ino()) == (meta.dev(), meta.ino()) {
                        bail!(
                            "{} {shown} is {}, which this command reads; choose another file",
                            self.flag,
                            if input == self.path { "an input".to_string() } else { format!("{}", input.display()) }
                        );
                    }
                }
            }
        }
        let found = owned::found(b, name).with_context(|| format!("{} {shown}", self.flag))?;
        match found {
            Found::Absent | Found::Owned(Kind::File) => {}
            Found::Foreign(Kind::File) if self.overwrite => {}
            Found::Foreign(Kind::File) => bail!(
                "{} {shown} exists and iolab did not write it, so iolab will not replace it; pass --overwrite to allow that, or choose another file",
                self.flag
            ),
            Found::Owned(Kind::Dir) | Found::Foreign(Kind::Dir) => {
                bail!("{} {shown} is a directory; name a file in it ({shown}/report.html)", self.flag)
            }
            Found::Owned(Kind::Other) | Found::Foreign(Kind::Other) => bail!(
                "{} {shown} is a link, a device, a FIFO or a socket; iolab writes only to a regular file (or - for stdout)",
                self.flag
            ),
        }
        Ok(found)
    }

    /// Open the file for writing by the rule above: created and marked as iolab's, or an
    /// existing one of iolab's (or any, with `--overwrite`) truncated and marked.
    pub fn create(&self) -> Result<File> {
        let (b, name) = self.place()?;
        let shown = self.path.display();
        let file = match self.check_in(&b, &name)? {
            Found::Absent => owned::create_file(&b, &name).with_context(|| format!("creating {shown}"))?,
            _ => {
                let o = OpenOptions { write: true, truncate: true, ..Default::default() };
                let f = b.open_file(&name, o).with_context(|| format!("opening {shown}"))?;
                owned::mark(&b, &name).with_context(|| format!("marking {shown} as iolab's"))?;
                f
            }
        };
        Ok(file)
    }

    /// Write `bytes` to the file (see [`OutPath::create`]).
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        let mut f = self.create()?;
        f.write_all(bytes).with_context(|| format!("writing {}", self.path.display()))?;
        Ok(())
    }
}
