//! A received message's bytes in a spill file, and the file itself.
//!
//! This module owns [`SpillFile`] (an unlinked temporary file, freed when its last region and
//! its writer are gone) and [`SpilledRegion`] (where one message's bytes lie in it, read back
//! when the worker decodes the message). It must not decide what to spill nor when (that is
//! [`super::receive_budget`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// A spill file, freed when its last region and its writer are gone.
#[derive(Debug)]
pub(crate) struct SpillFile {
    file: File,
}

impl SpillFile {
    /// A new, unlinked spill file in `dir`.
    pub(crate) fn create_in(dir: &Path) -> io::Result<Arc<SpillFile>> {
        Ok(Arc::new(SpillFile { file: tempfile::tempfile_in(dir)? }))
    }

    /// Writes `bytes` at `offset` of `file`; returns where they lie.
    pub(crate) fn write_region(
        file: &Arc<SpillFile>,
        bytes: &[u8],
        offset: u64,
    ) -> io::Result<SpilledRegion> {
        file.file.write_all_at(bytes, offset)?;
        Ok(SpilledRegion { file: Arc::clone(file), offset, len: bytes.len() })
    }
}

/// A message's payload in a spill file.
#[derive(Debug)]
pub struct SpilledRegion {
    file: Arc<SpillFile>,
    offset: u64,
    len: usize,
}

impl SpilledRegion {
    /// The payload's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads the payload into `scratch` (which it replaces).
    pub(crate) fn read_into(&self, scratch: &mut Vec<u8>) -> io::Result<()> {
        scratch.clear();
        scratch.resize(self.len, 0);
        self.file.file.read_exact_at(scratch, self.offset)
    }
}
