//! Engine instruction streams: a flat sequence of 64-byte [`Bundle`]s, one file per engine.
//!
//! A stream file (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`, `SP.bin`) has no header,
//! no framing and no padding: its length is a multiple of 64 and bundle `i` starts at byte
//! `64 * i`. The engine is not encoded in the bundles; it is implied by the file, so every
//! [`EngineStream`] carries the [`Engine`] it was opened for.
//!
//! [`EngineStream::open`] memory-maps the file and views the map as `&[Bundle]` without
//! copying (a map is page aligned, so the 64-byte alignment of [`Bundle`] holds; should it
//! ever not, the bytes are copied into an aligned buffer instead).
//! [`EngineStream::from_bytes`] copies an in-memory buffer (a NEFF member, a test vector)
//! into an aligned `Vec<Bundle>`.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::bundle::{Bundle, BUNDLE_SIZE};
use crate::engine::Engine;

/// An error opening or building an engine stream. Every variant names its source.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The file could not be opened, inspected or mapped.
    #[error("{path}: {source}")]
    Io {
        /// The stream file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The length is not a whole number of 64-byte bundles.
    #[error(
        "{source_name}: {len} bytes is not a multiple of {BUNDLE_SIZE} \
         ({bundles} whole bundles and {trailing} trailing bytes)"
    )]
    NotBundleAligned {
        /// The file path or member name.
        source_name: String,
        /// Total byte count.
        len: u64,
        /// Number of whole bundles.
        bundles: u64,
        /// Bytes after the last whole bundle (1..=63).
        trailing: u64,
    },
    /// No engine was given and none follows from the name.
    #[error(
        "{source_name}: cannot tell which engine this stream belongs to; name the file \
         PE.bin, Activation.bin, Pool.bin, DVE.bin or SP.bin, or give the engine explicitly"
    )]
    UnknownEngine {
        /// The file path or member name.
        source_name: String,
    },
}

/// Where the bundles of a stream live.
enum Storage {
    /// A read-only map of the file, 64-byte aligned.
    Mapped(memmap2::Mmap),
    /// An owned, aligned copy.
    Owned(Vec<Bundle>),
}

/// One engine's instruction stream.
pub struct EngineStream {
    engine: Engine,
    source_name: String,
    storage: Storage,
}

impl fmt::Debug for EngineStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineStream")
            .field("engine", &self.engine)
            .field("source", &self.source_name)
            .field("bundles", &self.len())
            .field("mapped", &matches!(self.storage, Storage::Mapped(_)))
            .finish()
    }
}

/// Resolve the engine: an explicit one wins, otherwise the file name decides.
fn resolve_engine(explicit: Option<Engine>, name: &str) -> Result<Engine, StreamError> {
    explicit
        .or_else(|| Engine::from_file_name(Path::new(name)))
        .ok_or_else(|| StreamError::UnknownEngine {
            source_name: name.to_string(),
        })
}

/// Check that `len` is a whole number of bundles.
fn check_len(source_name: &str, len: u64) -> Result<(), StreamError> {
    let size = BUNDLE_SIZE as u64;
    if len.is_multiple_of(size) {
        Ok(())
    } else {
        Err(StreamError::NotBundleAligned {
            source_name: source_name.to_string(),
            len,
            bundles: len / size,
            trailing: len % size,
        })
    }
}

/// Copy bytes (whose length is a multiple of 64) into an aligned bundle vector.
fn copy_bundles(bytes: &[u8]) -> Vec<Bundle> {
    let mut out = vec![Bundle::ZERO; bytes.len() / BUNDLE_SIZE];
    let whole = out.len() * BUNDLE_SIZE;
    bytemuck::cast_slice_mut::<Bundle, u8>(&mut out).copy_from_slice(&bytes[..whole]);
    out
}

/// Most bytes read from a stream that is not a regular file (a pipe, a FIFO, a device).
pub const MAX_UNMAPPED_STREAM_BYTES: u64 = 1 << 30;

impl EngineStream {
    /// Memory-map a stream file. The engine is `engine` if given, else it follows from the
    /// file name (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`, `SP.bin`, any case).
    ///
    /// The file must not be modified while the stream is alive (the map would observe it).
    pub fn open(
        path: impl AsRef<Path>,
        engine: Option<Engine>,
    ) -> Result<EngineStream, StreamError> {
        let path = path.as_ref();
        let source_name = path.display().to_string();
        let io = |source| StreamError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "is a directory, not a stream file",
            )));
        }
        let engine = resolve_engine(engine, &source_name)?;
        if !meta.is_file() {
            // A pipe, FIFO or device: its length is known only once it is read (up to a
            // limit), then checked like a file's.
            let bytes = crate::fsio::read_to_limit(file, MAX_UNMAPPED_STREAM_BYTES).map_err(io)?;
            return EngineStream::from_bytes(source_name, &bytes, Some(engine));
        }
        check_len(&source_name, meta.len())?;
        if meta.len() == 0 {
            // A zero-length map is an error on most systems; an empty stream is valid.
            return Ok(EngineStream {
                engine,
                source_name,
                storage: Storage::Owned(Vec::new()),
            });
        }
        // SAFETY: the map is read-only and private to this process; the documented contract is
        // that the file is not modified while the stream exists.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        // The file may have changed between the metadata call and the map.
        check_len(&source_name, map.len() as u64)?;
        let storage = if bytemuck::try_cast_slice::<u8, Bundle>(&map).is_ok() {
            Storage::Mapped(map)
        } else {
            Storage::Owned(copy_bundles(&map))
        };
        Ok(EngineStream {
            engine,
            source_name,
            storage,
        })
    }

    /// Build a stream from an in-memory buffer (copied into aligned storage). `name` is the
    /// file or member name used in errors and, when `engine` is `None`, to infer the engine.
    pub fn from_bytes(
        name: impl Into<String>,
        bytes: &[u8],
        engine: Option<Engine>,
    ) -> Result<EngineStream, StreamError> {
        let source_name = name.into();
        let engine = resolve_engine(engine, &source_name)?;
        check_len(&source_name, bytes.len() as u64)?;
        Ok(EngineStream {
            engine,
            source_name,
            storage: Storage::Owned(copy_bundles(bytes)),
        })
    }

    /// Build a stream from bundles already in memory.
    pub fn from_bundles(
        name: impl Into<String>,
        engine: Engine,
        bundles: Vec<Bundle>,
    ) -> EngineStream {
        EngineStream {
            engine,
            source_name: name.into(),
            storage: Storage::Owned(bundles),
        }
    }

    /// The bundles as an owned vector: moved out when the stream owns them, copied from a
    /// file map.
    pub fn into_bundles(self) -> Vec<Bundle> {
        match self.storage {
            Storage::Owned(v) => v,
            // The cast was checked when the stream was built (see `bundles`).
            Storage::Mapped(map) => bytemuck::try_cast_slice::<u8, Bundle>(&map)
                .map(<[Bundle]>::to_vec)
                .unwrap_or_default(),
        }
    }

    /// The engine that executes this stream.
    #[inline]
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The file path or member name the stream came from.
    #[inline]
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Whether the bundles are viewed in place in a file map (no copy was made).
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(_))
    }

    /// All bundles, in program order.
    #[inline]
    pub fn bundles(&self) -> &[Bundle] {
        match &self.storage {
            // The cast was checked when the stream was built; an empty slice is the only
            // other possible outcome and cannot occur for a non-empty aligned map.
            Storage::Mapped(map) => bytemuck::try_cast_slice(map).unwrap_or(&[]),
            Storage::Owned(v) => v,
        }
    }

    /// The raw bytes of the stream.
    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self.bundles())
    }

    /// Number of bundles.
    #[inline]
    pub fn len(&self) -> usize {
        self.bundles().len()
    }

    /// Whether the stream holds no bundle.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length in bytes.
    pub fn byte_len(&self) -> u64 {
        (self.len() * BUNDLE_SIZE) as u64
    }

    /// Bundle `index`, if in range.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&Bundle> {
        self.bundles().get(index)
    }

    /// Iterate `(index, byte offset, &Bundle)` in program order.
    pub fn iter(&self) -> StreamIter<'_> {
        StreamIter {
            inner: self.bundles().iter().enumerate(),
        }
    }
}

impl<'a> IntoIterator for &'a EngineStream {
    type Item = StreamItem<'a>;
    type IntoIter = StreamIter<'a>;
    fn into_iter(self) -> StreamIter<'a> {
        self.iter()
    }
}

/// One item of a stream iteration: bundle index, its byte offset in the stream, the bundle.
pub type StreamItem<'a> = (usize, u64, &'a Bundle);

/// Iterator over `(index, byte offset, &Bundle)`.
#[derive(Clone, Debug)]
pub struct StreamIter<'a> {
    inner: std::iter::Enumerate<std::slice::Iter<'a, Bundle>>,
}

impl<'a> Iterator for StreamIter<'a> {
    type Item = StreamItem<'a>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.inner
            .next()
            .map(|(i, b)| (i, (i * BUNDLE_SIZE) as u64, b))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for StreamIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner
            .next_back()
            .map(|(i, b)| (i, (i * BUNDLE_SIZE) as u64, b))
    }
}

impl ExactSizeIterator for StreamIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n * BUNDLE_SIZE)
            .map(|i| (i * 7 + i / 64) as u8)
            .collect()
    }

    #[test]
    fn open_maps_and_iterates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pe.BIN");
        let bytes = pattern(3);
        std::fs::write(&p, &bytes).unwrap();
        let s = EngineStream::open(&p, None).unwrap();
        assert_eq!(s.engine(), Engine::Pe);
        assert!(s.is_mapped());
        assert_eq!(s.len(), 3);
        assert_eq!(s.byte_len(), 192);
        assert_eq!(s.as_bytes(), &bytes[..]);
        let items: Vec<_> = s.iter().map(|(i, off, b)| (i, off, b.0[0])).collect();
        assert_eq!(
            items,
            vec![(0, 0, bytes[0]), (1, 64, bytes[64]), (2, 128, bytes[128])]
        );
        assert_eq!(s.get(1).unwrap().0[..], bytes[64..128]);
        assert!(s.get(3).is_none());
        let back: Vec<usize> = s.iter().rev().map(|(i, _, _)| i).collect();
        assert_eq!(back, vec![2, 1, 0]);
    }

    #[test]
    fn explicit_engine_wins_over_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("PE.bin");
        std::fs::write(&p, pattern(1)).unwrap();
        assert_eq!(
            EngineStream::open(&p, Some(Engine::Dve)).unwrap().engine(),
            Engine::Dve
        );
        let q = dir.path().join("kernel.dat");
        std::fs::write(&q, pattern(1)).unwrap();
        assert_eq!(
            EngineStream::open(&q, Some(Engine::Sp)).unwrap().engine(),
            Engine::Sp
        );
    }

    #[test]
    fn unknown_engine_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kernel.bin");
        std::fs::write(&p, pattern(1)).unwrap();
        let e = EngineStream::open(&p, None).unwrap_err();
        assert!(matches!(e, StreamError::UnknownEngine { .. }), "{e}");
        assert!(e.to_string().contains("kernel.bin"), "{e}");
        let e = EngineStream::from_bytes("blob", &pattern(1), None).unwrap_err();
        assert!(
            matches!(e, StreamError::UnknownEngine { ref source_name } if source_name == "blob")
        );
    }

    #[test]
    fn empty_file_is_zero_bundles() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("SP.bin");
        std::fs::write(&p, b"").unwrap();
        let s = EngineStream::open(&p, None).unwrap();
        assert_eq!(s.engine(), Engine::Sp);
        assert!(s.is_empty());
        assert_eq!(s.iter().count(), 0);
    }

    #[test]
    fn unaligned_length_names_file_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("Pool.bin");
        std::fs::write(&p, vec![0u8; 64 * 2 + 5]).unwrap();
        let e = EngineStream::open(&p, None).unwrap_err();
        match &e {
            StreamError::NotBundleAligned {
                len,
                bundles,
                trailing,
                source_name,
            } => {
                assert_eq!((*len, *bundles, *trailing), (133, 2, 5));
                assert!(source_name.ends_with("Pool.bin"));
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains("Pool.bin") && msg.contains("133 bytes") && msg.contains("5 trailing"),
            "{msg}"
        );
        let e = EngineStream::from_bytes("sg00/DVE.bin", &[1, 2, 3], None).unwrap_err();
        assert!(matches!(
            e,
            StreamError::NotBundleAligned {
                len: 3,
                bundles: 0,
                trailing: 3,
                ..
            }
        ));
    }

    #[test]
    fn io_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("DVE.bin");
        let e = EngineStream::open(&p, None).unwrap_err();
        assert!(matches!(e, StreamError::Io { ref path, .. } if path == &p));
        assert!(e.to_string().contains("DVE.bin"), "{e}");
        let d = dir.path().join("Activation.bin");
        std::fs::create_dir(&d).unwrap();
        let e = EngineStream::open(&d, None).unwrap_err();
        assert!(matches!(e, StreamError::Io { .. }), "{e}");
    }

    #[test]
    fn from_bytes_copies_unaligned_input() {
        let bytes = pattern(2);
        // Force a misaligned start: offset 1 into a larger buffer.
        let mut big = vec![0u8; bytes.len() + 1];
        big[1..].copy_from_slice(&bytes);
        let s = EngineStream::from_bytes("Activation.bin", &big[1..], None).unwrap();
        assert_eq!(s.engine(), Engine::Act);
        assert!(!s.is_mapped());
        assert_eq!(s.as_bytes(), &bytes[..]);
        let s = EngineStream::from_bundles("x", Engine::Pool, vec![Bundle::ZERO; 4]);
        assert_eq!(
            (s.len(), s.engine(), s.source_name()),
            (4, Engine::Pool, "x")
        );
    }

    #[test]
    fn into_bundles_moves_owned_storage_and_copies_a_map() {
        let bytes = pattern(3);
        let s = EngineStream::from_bytes("DVE.bin", &bytes, None).unwrap();
        let at = s.bundles().as_ptr();
        let v = s.into_bundles();
        assert_eq!(v.as_ptr(), at, "the owned vector is moved, not copied");
        assert_eq!(bytemuck::cast_slice::<Bundle, u8>(&v), &bytes[..]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("PE.bin");
        std::fs::write(&path, &bytes).unwrap();
        let s = EngineStream::open(&path, None).unwrap();
        assert!(s.is_mapped());
        assert_eq!(
            bytemuck::cast_slice::<Bundle, u8>(&s.into_bundles()),
            &bytes[..]
        );
    }
}
