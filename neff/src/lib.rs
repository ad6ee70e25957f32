//! The NEFF container: read, inspect and write.
//!
//! A NEFF is a 1024-byte [`Header`] followed by a tar archive (gzip-compressed with an MD5 in
//! the header for `pkg_version` 2, plain with a SHA-256 for `pkg_version` 1). A bare gzip or
//! plain tar with no header is accepted too. The archive's members are plain files:
//! `neff.json`, one `sgNN/def.json` per subgraph, one instruction stream per engine (under its
//! tar token `pe_instr`, ... or its file name `PE.bin`, ...), a DMA sidecar per stream
//! (`PE.json` or `pe`), `.npy` constants.
//!
//! Reading is defensive: member paths that escape the root, links and devices, duplicate
//! names, decompression bombs (configurable [`Limits`]), hash mismatches, truncated or
//! corrupt data and inconsistent header sizes are refused with a [`NeffError`] naming what
//! was wrong; no input makes the reader panic. Writing is deterministic: sorted members,
//! owner `nobody`, zero timestamps, gzip level 1, the digest in the header, and the file is
//! written to a temporary name and renamed into place.
//!
//! `docs/neff.md` lists every field and key tpbsim reads and writes, with its source.

#![forbid(unsafe_op_in_unsafe_fn)]

mod archive;
pub mod features;
pub mod header;
pub mod npy;
pub mod reader;
pub mod schema;
#[cfg(any(test, feature = "proptest"))]
pub mod strategies;
pub mod unmodelled;
pub mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use features::{logical_core, FeatureFlag, LogicalCore, FEATURE_FLAGS};
pub use header::{DigestStatus, Header, HeaderTextError, HEADER_LEN, PKG_GZIP_MD5, PKG_TAR_SHA256};
pub use npy::{NpyArray, NpyElem, NpyError};
pub use reader::{Plan, Reader, Target};
pub use schema::{
    engine_token, BackingBuf, DefError, DefJson, DmaBlock, DmaEntry, DmaOp, DmaQueue, DveTableSet,
    DynamicDma, EngineFiles, Fp8ConversionConfig, NeffJson, SemOp, Sidecar, VarKind, VarRef,
    Variable,
};
pub use unmodelled::Unmodelled;
pub use writer::{to_runtime_layout, Repacked};

use serde_json::Value;

use tpbsim_isa::engine::Engine;
use tpbsim_isa::stream::{EngineStream, StreamError};

/// An error reading, validating or writing a NEFF.
#[derive(Debug, thiserror::Error)]
pub enum NeffError {
    /// File-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Shorter than the 1024-byte header and not a bare archive.
    #[error("truncated NEFF header: {len} bytes, the header alone is {HEADER_LEN}")]
    TruncatedHeader {
        /// File length.
        len: u64,
    },
    /// `pkg_version` is neither 1 nor 2.
    #[error("unsupported NEFF package version {0} (1 = tar + SHA-256, 2 = gzip tar + MD5)")]
    UnsupportedPackageVersion(u64),
    /// `header_size` does not fit the file.
    #[error("header_size {header_size} is not below the file size {file_len}")]
    HeaderSize {
        /// Recorded header size.
        header_size: u64,
        /// File length.
        file_len: u64,
    },
    /// `data_size` is zero or larger than the bytes after the header.
    #[error("data_size {data_size} but {available} bytes follow the 1024-byte header")]
    DataSize {
        /// Recorded payload size.
        data_size: u64,
        /// Bytes present after the header.
        available: u64,
    },
    /// The payload digest does not match the header (checked only when asked:
    /// [`ReadOptions::verify_hash`], `--verify-hash`).
    #[error("{algorithm} mismatch: header has {expected}, payload hashes to {actual} (the check runs only with --verify-hash; the runtime skips it unless NEURON_RT_VALIDATE_HASH is set)")]
    HashMismatch {
        /// `MD5` or `SHA-256`.
        algorithm: &'static str,
        /// Digest recorded in the header (hex).
        expected: String,
        /// Digest of the payload (hex).
        actual: String,
    },
    /// `feature_bits` has bits the runtime refuses (`neff_version_major` 2, mask
    /// `0x7FFFFFFFF8000000`, R `neff/container.md`).
    #[error("feature_bits {bits:#x}: bits {refused:#x} are in the runtime's reject mask {:#x} (neff_version_major 2): the NEFF needs features newer than the runtime's set {:#x}", features::FEATURE_REJECT_MASK, features::FEATURE_SUPPORTED)]
    UnsupportedFeatures {
        /// The header's `feature_bits`.
        bits: u64,
        /// The refused ones.
        refused: u64,
    },
    /// A non-zero byte after the archive: only zero padding may follow the gzip member (the
    /// runtime reads one member up to the tar's end-of-archive marker and never looks past it).
    #[error("byte {offset} of the file is {value:#04x}, after the archive that ends at byte {archive_end}: only zero padding may follow it (a second gzip member or trailing data; one member is read)")]
    TrailingData {
        /// File offset of the first non-zero byte.
        offset: u64,
        /// Its value.
        value: u8,
        /// File offset just past the archive (the gzip member's trailer, or the plain tar's
        /// `data_size` bytes).
        archive_end: u64,
    },
    /// The number of subgraphs is neither 1 nor the logical-core size (the runtime asserts
    /// `nkbin == 1 || nkbin == vnc core size`, R `neff/load-pipeline.md`).
    #[error("{subgraphs} subgraphs for a logical core of {lnc_size} physical core(s): the runtime loads 1 subgraph, or one per physical core")]
    SubgraphCount {
        /// Subgraphs the NEFF declares.
        subgraphs: usize,
        /// The logical-core size (`lnc_size`, 0 read as 1).
        lnc_size: u32,
    },
    /// A `def.json` key breaks one of its rules.
    #[error("{member}: at {path}: {error}")]
    Def {
        /// The member.
        member: String,
        /// JSON path.
        path: String,
        /// The rule broken.
        error: DefError,
    },
    /// The archive ends early.
    #[error("truncated archive: {detail}")]
    TruncatedArchive {
        /// What was being read.
        detail: String,
    },
    /// The archive is not valid gzip/tar.
    #[error("corrupt archive: {detail}")]
    CorruptArchive {
        /// The decoder's complaint.
        detail: String,
    },
    /// A member path is absolute, escapes the root, or is otherwise unusable.
    #[error("unsafe member path `{member}`: {reason}")]
    UnsafePath {
        /// The path as stored.
        member: String,
        /// Why it is refused.
        reason: String,
    },
    /// A member is a link, device, FIFO or other non-file entry.
    #[error("member `{member}` is a {kind}; only regular files and directories are accepted")]
    UnsupportedEntry {
        /// The path as stored.
        member: String,
        /// The entry kind.
        kind: &'static str,
    },
    /// Two members have the same (normalised) path.
    #[error("duplicate member `{member}`")]
    DuplicateMember {
        /// The normalised path.
        member: String,
    },
    /// A member exceeds the per-member size limit.
    #[error("member `{member}` is {size} bytes, above the per-member limit of {limit}")]
    MemberTooLarge {
        /// The member.
        member: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The uncompressed archive exceeds the total size limit.
    #[error("uncompressed archive exceeds the limit of {limit} bytes")]
    ArchiveTooLarge {
        /// The limit.
        limit: u64,
    },
    /// More members than the limit.
    #[error("archive has more than {limit} members")]
    TooManyMembers {
        /// The limit.
        limit: usize,
    },
    /// A member that another one names is absent.
    #[error("missing member `{member}` (named by {wanted_by})")]
    MissingMember {
        /// The member looked for.
        member: String,
        /// Who names it.
        wanted_by: String,
    },
    /// A JSON member does not parse into its schema.
    #[error("{member}: at {path}: {message}")]
    Json {
        /// The member.
        member: String,
        /// JSON path.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// A JSON member parses but is inconsistent.
    #[error("{member}: at {path}: {message}")]
    Invalid {
        /// The member.
        member: String,
        /// JSON path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An instruction stream member is not a whole number of bundles.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// An `.npy` member is unreadable or disagrees with its variable.
    #[error("{member}: {source}")]
    Npy {
        /// The member.
        member: String,
        /// The cause.
        #[source]
        source: NpyError,
    },
    /// Something cannot be packed (a link in the input directory, a name that is too long).
    #[error("cannot pack {what}: {reason}")]
    Pack {
        /// The offending input.
        what: String,
        /// Why.
        reason: String,
    },
}

/// Size limits applied while reading (and packing) an archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest total of member sizes, uncompressed.
    pub max_total_bytes: u64,
    /// Largest single member.
    pub max_member_bytes: u64,
    /// Most entries (files and directories).
    pub max_members: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_bytes: 1 << 30,
            max_member_bytes: 512 << 20,
            max_members: 100_000,
        }
    }
}

/// Options for reading a NEFF.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Check the payload digest against the header and refuse a mismatch (default off, as the
    /// runtime: `NEURON_RT_VALIDATE_HASH` defaults to false; the neuronx-cc 2.23 header hash
    /// does not cover the payload).
    pub verify_hash: bool,
    /// Size limits.
    pub limits: Limits,
}

/// How the archive sits in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 1024-byte header, then the payload.
    Headered,
    /// A bare gzip tar, no header.
    BareGzip,
    /// A bare plain tar, no header.
    BareTar,
}

/// A NEFF in memory: its header and its members by normalised path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neff {
    /// The header (for a bare archive, a default header with `data_size` set).
    pub header: Header,
    /// How the archive was stored when read ([`Layout::Headered`] for a new NEFF).
    pub layout: Layout,
    /// The payload digest check made when it was read ([`DigestStatus::NotChecked`] unless
    /// [`ReadOptions::verify_hash`]; a mismatch is refused then, so it reads `Match`).
    pub digest: DigestStatus,
    /// Member contents by path (`/`-separated, no leading `./`).
    pub members: BTreeMap<String, Vec<u8>>,
}

/// Everything in `bytes` from `archive_end` on must be zero: the padding the compiler writes up
/// to `data_size`, and anything after `data_size`.
fn check_trailing(bytes: &[u8], archive_end: usize) -> Result<(), NeffError> {
    let rest = bytes.get(archive_end..).unwrap_or_default();
    match rest.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(NeffError::TrailingData {
            offset: (archive_end + i) as u64,
            value: rest[i],
            archive_end: archive_end as u64,
        }),
    }
}

/// Join a subgraph directory and a relative name.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

pub use tpbsim_isa::fsio::write_atomic;

impl Neff {
    /// An empty NEFF (pkg_version 2) with a model name.
    pub fn new(name: &str) -> Result<Neff, NeffError> {
        let mut header = Header::default();
        header.set_name(name).map_err(|e| NeffError::Pack {
            what: "the name".into(),
            reason: e.to_string(),
        })?;
        Ok(Neff {
            header,
            layout: Layout::Headered,
            digest: DigestStatus::NotChecked,
            members: BTreeMap::new(),
        })
    }

    /// Read a NEFF file.
    pub fn read(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Neff, NeffError> {
        let path = path.as_ref();
        let io = |source| NeffError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "is a directory",
            )));
        }
        if meta.len() == 0 {
            return Neff::from_bytes(&[], opts);
        }
        // SAFETY: read-only private map; the file is only read during this call.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Neff::from_bytes(&map, opts)
    }

    /// Read a NEFF image from memory.
    pub fn from_bytes(bytes: &[u8], opts: &ReadOptions) -> Result<Neff, NeffError> {
        let file_len = bytes.len() as u64;
        // A header starts with pkg_version 1 or 2 as a little-endian u64; a bare archive starts
        // with gzip magic or a tar member name, never with those bytes. Deciding on the header
        // first keeps a model name that happens to hold `ustar` at byte 257 from misleading us.
        let headered = bytes.get(..8).is_some_and(|b| {
            let v = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            v == PKG_TAR_SHA256 || v == PKG_GZIP_MD5
        });
        if !headered && (archive::is_gzip(bytes) || archive::is_tar(bytes)) {
            let layout = if archive::is_gzip(bytes) {
                Layout::BareGzip
            } else {
                Layout::BareTar
            };
            let (members, archive_end) = archive::read_members(bytes, &opts.limits)?;
            check_trailing(bytes, archive_end)?;
            let header = Header {
                pkg_version: if layout == Layout::BareGzip {
                    PKG_GZIP_MD5
                } else {
                    PKG_TAR_SHA256
                },
                data_size: file_len,
                ..Header::default()
            };
            return Ok(Neff {
                header,
                layout,
                digest: DigestStatus::NotChecked,
                members,
            });
        }
        let Some(head) = bytes
            .get(..HEADER_LEN)
            .and_then(|h| <&[u8; HEADER_LEN]>::try_from(h).ok())
        else {
            return Err(NeffError::TruncatedHeader { len: file_len });
        };
        let header = Header::parse(head);
        if header.pkg_version != PKG_TAR_SHA256 && header.pkg_version != PKG_GZIP_MD5 {
            return Err(NeffError::UnsupportedPackageVersion(header.pkg_version));
        }
        if header.header_size >= file_len {
            return Err(NeffError::HeaderSize {
                header_size: header.header_size,
                file_len,
            });
        }
        let refused = features::refused_bits(header.neff_version_major, header.feature_bits);
        if refused != 0 {
            return Err(NeffError::UnsupportedFeatures {
                bits: header.feature_bits,
                refused,
            });
        }
        // The runtime hands [1024, 1024 + data_size) to its archive reader and requires only
        // that it fits the file (R neff/container.md).
        let available = file_len - HEADER_LEN as u64;
        if header.data_size > available || header.data_size == 0 {
            return Err(NeffError::DataSize {
                data_size: header.data_size,
                available,
            });
        }
        // data_size <= available, which is a usize.
        let end = HEADER_LEN + header.data_size as usize;
        let payload = &bytes[HEADER_LEN..end];
        let digest = if opts.verify_hash {
            match header.check_digest(payload) {
                DigestStatus::Mismatch {
                    algorithm,
                    expected,
                    actual,
                } => {
                    return Err(NeffError::HashMismatch {
                        algorithm,
                        expected,
                        actual,
                    })
                }
                status => status,
            }
        } else {
            DigestStatus::NotChecked
        };
        let (members, archive_end) = archive::read_members(payload, &opts.limits)?;
        check_trailing(bytes, HEADER_LEN + archive_end)?;
        Ok(Neff {
            header,
            layout: Layout::Headered,
            digest,
            members,
        })
    }

    /// Build a NEFF from the regular files under `dir` (member names are the relative
    /// paths). Symbolic links and special files are refused; `limits` bound what is packed.
    pub fn from_dir(dir: impl AsRef<Path>, name: &str, limits: &Limits) -> Result<Neff, NeffError> {
        let root = dir.as_ref();
        let mut neff = Neff::new(name)?;
        let mut total = 0u64;
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            let io = |source| NeffError::Io {
                path: d.clone(),
                source,
            };
            let mut entries: Vec<_> = std::fs::read_dir(&d)
                .map_err(io)?
                .collect::<Result<_, _>>()
                .map_err(io)?;
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let path = entry.path();
                let ft = entry.file_type().map_err(|source| NeffError::Io {
                    path: path.clone(),
                    source,
                })?;
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let shown = rel.display().to_string();
                if ft.is_symlink() {
                    return Err(NeffError::Pack {
                        what: shown,
                        reason: "symbolic links are not packed".into(),
                    });
                }
                if ft.is_dir() {
                    stack.push(path);
                    continue;
                }
                if !ft.is_file() {
                    return Err(NeffError::Pack {
                        what: shown,
                        reason: "not a regular file".into(),
                    });
                }
                let rel_str = rel
                    .components()
                    .map(|c| c.as_os_str().to_str())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| NeffError::Pack {
                        what: shown.clone(),
                        reason: "name is not UTF-8".into(),
                    })?
                    .join("/");
                let member =
                    archive::normalize_member_path(rel_str.as_bytes()).map_err(|reason| {
                        NeffError::Pack {
                            what: shown.clone(),
                            reason,
                        }
                    })?;
                // The size is checked before the file is read, and the read stops at the limit
                // should the file grow meanwhile.
                let too_large = |size| NeffError::MemberTooLarge {
                    member: member.clone(),
                    size,
                    limit: limits.max_member_bytes,
                };
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                if len > limits.max_member_bytes {
                    return Err(too_large(len));
                }
                let data = tpbsim_isa::fsio::read_limited(&path, limits.max_member_bytes).map_err(
                    |source| NeffError::Io {
                        path: path.clone(),
                        source,
                    },
                )?;
                let size = data.len() as u64;
                if size > limits.max_member_bytes {
                    return Err(NeffError::MemberTooLarge {
                        member,
                        size,
                        limit: limits.max_member_bytes,
                    });
                }
                total += size;
                if total > limits.max_total_bytes {
                    return Err(NeffError::ArchiveTooLarge {
                        limit: limits.max_total_bytes,
                    });
                }
                neff.members.insert(member, data);
                if neff.members.len() > limits.max_members {
                    return Err(NeffError::TooManyMembers {
                        limit: limits.max_members,
                    });
                }
            }
        }
        Ok(neff)
    }

    /// The file image: header (sealed with the payload's size and digest; a zero UUID is
    /// derived from the digest; an empty build tag becomes `tpbsim <version>`) and payload
    /// (gzip tar for pkg_version 2, plain tar for 1).
    pub fn to_bytes(&self) -> Result<Vec<u8>, NeffError> {
        let mut header = self.header.clone();
        let payload = match header.pkg_version {
            PKG_GZIP_MD5 => archive::write_gzip_tar(&self.members),
            PKG_TAR_SHA256 => archive::write_plain_tar(&self.members),
            v => return Err(NeffError::UnsupportedPackageVersion(v)),
        }
        .map_err(|e| NeffError::Pack {
            what: "the archive".into(),
            reason: e.to_string(),
        })?;
        header.header_size = HEADER_LEN as u64;
        header.seal(&payload);
        if header.uuid == [0; 16] {
            let md5: [u8; 16] = <md5::Md5 as md5::Digest>::digest(&payload).into();
            header.uuid = header::uuid_from_md5(&md5);
        }
        if header.build_version == [0; 128] {
            header
                .set_build_version(concat!("tpbsim ", env!("CARGO_PKG_VERSION")))
                .map_err(|e| NeffError::Pack {
                    what: "the build tag".into(),
                    reason: e.to_string(),
                })?;
        }
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(&header.to_bytes());
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Write the NEFF to `path` (temporary file in the same directory, then rename).
    pub fn write_to(&self, path: impl AsRef<Path>) -> Result<(), NeffError> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        write_atomic(path, &bytes).map_err(|source| NeffError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A member's bytes.
    pub fn member(&self, name: &str) -> Option<&[u8]> {
        self.members.get(name).map(Vec::as_slice)
    }

    /// `neff.json`, if present.
    pub fn neff_json(&self) -> Result<Option<NeffJson>, NeffError> {
        self.member("neff.json")
            .map(|b| schema::parse_json("neff.json", b))
            .transpose()
    }

    /// Subgraph directories in the reader's order (`""` for one at the root); empty when the
    /// NEFF's manifests do not parse (see [`Neff::plan`] for the error).
    pub fn subgraph_dirs(&self) -> Vec<String> {
        self.plan()
            .map(|p| p.graphs.into_iter().map(|(d, _)| d).collect())
            .unwrap_or_default()
    }

    /// Every subgraph, parsed and validated.
    pub fn subgraphs(&self) -> Result<Vec<Subgraph>, NeffError> {
        let plan = self.plan()?;
        plan.graphs
            .iter()
            .map(|(d, m)| self.subgraph_at(d, m, plan.reader))
            .collect()
    }

    /// One subgraph by directory: its `def.json`, its engine streams and engine JSONs, checked
    /// against each other (stream lengths, DMA references, `file` variables and their data).
    pub fn subgraph(&self, dir: &str) -> Result<Subgraph, NeffError> {
        let plan = self.plan()?;
        let (member, reader) = match plan.graphs.iter().find(|(d, _)| d == dir) {
            Some((_, m)) => (m.clone(), plan.reader),
            None => (join(dir, "def.json"), Reader::ByName),
        };
        self.subgraph_at(dir, &member, reader)
    }

    /// Check that the subgraphs read something and that no stream-like member is left aside:
    /// a NEFF with no subgraph, subgraphs without any stream, or a member shaped like a stream
    /// that no subgraph reads is an error naming what was found.
    pub fn check_reachable(&self, sgs: &[Subgraph]) -> Result<(), NeffError> {
        let used: std::collections::BTreeSet<String> =
            sgs.iter().flat_map(|s| s.used.iter().cloned()).collect();
        let stray = self.stray_streams(&used);
        if !stray.is_empty() {
            let reached = if sgs.is_empty() {
                "no def.json reaches them".to_string()
            } else {
                let defs: Vec<&str> = sgs.iter().map(|s| s.def_member.as_str()).collect();
                format!("not reached from {}", defs.join(", "))
            };
            return Err(NeffError::Invalid {
                member: stray.join(", "),
                path: ".".into(),
                message: format!("stream-like member(s) ignored: {reached}"),
            });
        }
        if sgs.is_empty() {
            let what = if self.members.is_empty() {
                "the archive is empty".to_string()
            } else {
                format!("no def.json among its {} member(s)", self.members.len())
            };
            return Err(NeffError::Invalid {
                member: "def.json".into(),
                path: ".".into(),
                message: format!("nothing to check: {what}"),
            });
        }
        for sg in sgs {
            if sg.streams.is_empty() {
                return Err(NeffError::Invalid {
                    member: sg.def_member.clone(),
                    path: ".".into(),
                    message: "nothing to check: the subgraph names no engine stream".into(),
                });
            }
        }
        Ok(())
    }

    fn subgraph_at(
        &self,
        dir: &str,
        def_member: &str,
        reader: Reader,
    ) -> Result<Subgraph, NeffError> {
        let def_member = def_member.to_string();
        let bytes = self
            .member(&def_member)
            .ok_or_else(|| NeffError::MissingMember {
                member: def_member.clone(),
                wanted_by: "the reader".into(),
            })?;
        let raw = reader::parse_value(&def_member, bytes)?;
        let mut def: DefJson = schema::parse_json(&def_member, bytes)?;
        def.keyed = raw.get("var").is_some_and(Value::is_object)
            || raw.get("dma_queue").is_some_and(Value::is_object);
        def.validate(&def_member)?;
        let mut used = std::collections::BTreeSet::from([def_member.clone()]);
        let mut unmodelled = Vec::new();
        unmodelled::Scan {
            out: &mut unmodelled,
        }
        .def_json(&def_member, &raw);
        let mut named: BTreeMap<String, String> = unmodelled::debug_members(dir, &def_member, &raw)
            .into_iter()
            .filter(|(m, _)| self.members.contains_key(m))
            .collect();
        let mut streams = BTreeMap::new();
        let mut sidecars = BTreeMap::new();
        let runtime_engines = Engine::ALL.iter().any(|&e| def.engine_json(e).is_some());
        for engine in Engine::ALL {
            let tok = engine_token(engine);
            if runtime_engines {
                // def.json names each engine's JSON; that JSON names the stream.
                if let Some(v) = def.extra.get(tok) {
                    if !v.is_string() {
                        return Err(NeffError::Invalid {
                            member: def_member.clone(),
                            path: tok.into(),
                            message: "not a string naming the engine's JSON member".into(),
                        });
                    }
                }
                let Some(ej) = def.engine_json(engine) else {
                    continue;
                };
                let member = join(dir, ej);
                let data = self
                    .member(&member)
                    .ok_or_else(|| NeffError::MissingMember {
                        member: member.clone(),
                        wanted_by: format!("{def_member} {tok}"),
                    })?;
                let ev = reader::parse_value(&member, data)?;
                let sidecar: Sidecar = schema::parse_json(&member, data)?;
                schema::validate_sidecar(&member, &sidecar, &def)?;
                used.insert(member.clone());
                let mut runs = false;
                if let Some(instr) = &sidecar.instr {
                    archive::normalize_member_path(instr.as_bytes()).map_err(|reason| {
                        NeffError::Invalid {
                            member: member.clone(),
                            path: "instr".into(),
                            message: format!("`{instr}`: {reason}"),
                        }
                    })?;
                    let sm = join(dir, instr);
                    let sdata = self.member(&sm).ok_or_else(|| NeffError::MissingMember {
                        member: sm.clone(),
                        wanted_by: format!("{member} instr"),
                    })?;
                    let stream = EngineStream::from_bytes(sm.clone(), sdata, Some(engine))?;
                    runs = !stream.bundles().is_empty();
                    used.insert(sm.clone());
                    streams.insert(engine, StreamMember { member: sm, stream });
                }
                unmodelled::Scan {
                    out: &mut unmodelled,
                }
                .engine_json(&member, &ev, &sidecar, runs);
                self.engine_members(dir, &member, &sidecar, runs, &mut named)?;
                sidecars.insert(engine, SidecarMember { member, sidecar });
                continue;
            }
            if let Some((member, data)) = self.find_stream(dir, &def_member, &def, engine)? {
                let stream = EngineStream::from_bytes(member.clone(), data, Some(engine))?;
                used.insert(member.clone());
                streams.insert(engine, StreamMember { member, stream });
            }
            let title = engine.stream_file_name().trim_end_matches(".bin");
            let candidates = [join(dir, &format!("{title}.json")), join(dir, tok)];
            if let Some(member) = candidates
                .into_iter()
                .find(|m| self.members.contains_key(m))
            {
                let data = &self.members[&member];
                let sidecar: Sidecar = schema::parse_json(&member, data)?;
                schema::validate_sidecar(&member, &sidecar, &def)?;
                let ev = reader::parse_value(&member, data)?;
                let runs = streams
                    .get(&engine)
                    .is_some_and(|s| !s.stream.bundles().is_empty());
                unmodelled::Scan {
                    out: &mut unmodelled,
                }
                .engine_json(&member, &ev, &sidecar, runs);
                self.engine_members(dir, &member, &sidecar, runs, &mut named)?;
                used.insert(member.clone());
                sidecars.insert(engine, SidecarMember { member, sidecar });
            }
        }
        // Named members are kept with the subgraph (packing keeps them); their content is
        // listed as not modelled.
        used.extend(named.keys().cloned());
        let mut sg = Subgraph {
            dir: dir.to_string(),
            def_member,
            def,
            streams,
            sidecars,
            reader,
            unmodelled,
            named,
            used,
        };
        for i in 0..sg.def.var.len() {
            if sg.def.var[i].file_name.is_some() {
                let v = sg.def.var[i].clone();
                self.check_file_var(&sg, i, &v)?;
                if let Some(f) = &v.file_name {
                    let m = join(dir, f);
                    sg.used.insert(m);
                }
            }
        }
        Ok(sg)
    }

    /// Find an engine's stream: the file `def.json` names (and only that one when it names
    /// one), else `<tok>_instr`, else `<Engine>.bin`. Two candidates with different contents
    /// are an error.
    fn find_stream<'a>(
        &'a self,
        dir: &str,
        def_member: &str,
        def: &DefJson,
        engine: Engine,
    ) -> Result<Option<(String, &'a [u8])>, NeffError> {
        let tok = engine_token(engine);
        let named = def.instr_file(engine).map(|f| join(dir, f));
        let token = join(dir, &format!("{tok}_instr"));
        let title = join(dir, engine.stream_file_name());
        // A file def.json names may sit in the archive under its tar token (C-bin); any other
        // member is not a substitute for it.
        let acceptable: Vec<&String> = match &named {
            Some(n) => vec![n, &token],
            None => vec![&token, &title],
        };
        let found: Vec<(String, &[u8])> = named
            .iter()
            .chain([&token, &title])
            .filter_map(|m| self.members.get(m).map(|d| (m.clone(), d.as_slice())))
            .collect();
        let Some(first) = found.iter().find(|(m, _)| acceptable.contains(&m)).cloned() else {
            if let Some(n) = named {
                return Err(NeffError::MissingMember {
                    member: n,
                    wanted_by: format!("{def_member} definition.{tok}._instr"),
                });
            }
            return Ok(None);
        };
        if let Some((other, _)) = found.iter().find(|(m, d)| m != &first.0 && *d != first.1) {
            return Err(NeffError::Invalid {
                member: def_member.to_string(),
                path: format!("definition.{tok}"),
                message: format!(
                    "`{}` and `{other}` are both {engine} streams with different contents",
                    first.0
                ),
            });
        }
        Ok(Some(first))
    }

    fn check_file_var(&self, sg: &Subgraph, i: usize, v: &Variable) -> Result<(), NeffError> {
        let Some(name) = &v.file_name else {
            return Ok(());
        };
        let member = join(&sg.dir, name);
        let data = self
            .member(&member)
            .ok_or_else(|| NeffError::MissingMember {
                member: member.clone(),
                wanted_by: format!("{} {}.file_name", sg.def_member, sg.def.var_path(i)),
            })?;
        let invalid = |path: &str, message: String| NeffError::Invalid {
            member: sg.def_member.clone(),
            path: format!("{}.{path}", sg.def.var_path(i)),
            message,
        };
        if member.ends_with(".npy") {
            let arr = npy::read_npy(data).map_err(|source| NeffError::Npy {
                member: member.clone(),
                source,
            })?;
            if let Some(dt) = v.dtype {
                arr.resolve(dt).map_err(|source| NeffError::Npy {
                    member: member.clone(),
                    source,
                })?;
            }
            if let Some(shape) = &v.shape {
                if shape != &arr.shape {
                    return Err(invalid(
                        "shape",
                        format!("{shape:?} but `{member}` has shape {:?}", arr.shape),
                    ));
                }
            }
            if let Some(size) = v.size {
                if size != arr.data.len() as u64 {
                    return Err(invalid(
                        "size",
                        format!("{size} but `{member}` holds {} bytes", arr.data.len()),
                    ));
                }
            }
        } else if let Some(size) = v.size {
            if size != data.len() as u64 {
                return Err(invalid(
                    "size",
                    format!("{size} but `{member}` holds {} bytes", data.len()),
                ));
            }
        }
        Ok(())
    }

    /// Decode an `.npy` member.
    pub fn npy(&self, member: &str) -> Result<NpyArray, NeffError> {
        let data = self
            .member(member)
            .ok_or_else(|| NeffError::MissingMember {
                member: member.to_string(),
                wanted_by: "the caller".into(),
            })?;
        npy::read_npy(data).map_err(|source| NeffError::Npy {
            member: member.to_string(),
            source,
        })
    }

    /// Extract every member under `dir`. Existing files are replaced only with `overwrite`;
    /// a symbolic link met on the way is never followed; nothing is written outside `dir`.
    /// When a member cannot be written, the files and directories this call created are
    /// removed again. Work is linear in the total length of the member names.
    pub fn unpack(&self, dir: impl AsRef<Path>, overwrite: bool) -> Result<(), NeffError> {
        let root = dir.as_ref();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| NeffError::Io { path, source }
        };
        // Check every target first so a refusal leaves the directory untouched.
        for name in self.members.keys() {
            // A path longer than the system allows cannot be created; refused before the
            // per-component checks below (each a system call on a prefix of the path).
            if name.len() > UNPACK_MAX_PATH || name.matches('/').count() >= UNPACK_MAX_DEPTH {
                return Err(NeffError::UnsafePath {
                    member: name.chars().take(64).collect::<String>() + "…",
                    reason: format!(
                        "{} bytes in {} components: more than {UNPACK_MAX_PATH} bytes or {UNPACK_MAX_DEPTH} components cannot be unpacked",
                        name.len(),
                        name.matches('/').count() + 1
                    ),
                });
            }
            // A member that is also a directory of another: the members are sorted, so the
            // first key at or after `name/` tells.
            let as_dir = format!("{name}/");
            if let Some((other, _)) = self.members.range(as_dir.clone()..).next() {
                if other.starts_with(&as_dir) {
                    return Err(NeffError::UnsafePath {
                        member: other.clone(),
                        reason: format!("`{name}` is both a file and a directory"),
                    });
                }
            }
            let target = root.join(name);
            let mut cur = root.to_path_buf();
            for comp in Path::new(name).components() {
                cur.push(comp);
                if let Ok(meta) = std::fs::symlink_metadata(&cur) {
                    if meta.file_type().is_symlink() {
                        return Err(NeffError::UnsafePath {
                            member: name.clone(),
                            reason: format!("{} is a symbolic link", cur.display()),
                        });
                    }
                    if cur == target && !overwrite {
                        return Err(NeffError::Io {
                            path: target.clone(),
                            source: std::io::Error::new(
                                std::io::ErrorKind::AlreadyExists,
                                "exists (use --force to overwrite)",
                            ),
                        });
                    }
                } else {
                    break;
                }
            }
        }
        let mut created: Vec<PathBuf> = Vec::new();
        let mut written: Vec<PathBuf> = Vec::new();
        let result = (|| {
            create_dirs(root, &mut created).map_err(io(root))?;
            for (name, data) in &self.members {
                // Names were normalised on read; re-check members added in memory.
                let safe = archive::normalize_member_path(name.as_bytes()).map_err(|reason| {
                    NeffError::UnsafePath {
                        member: name.clone(),
                        reason,
                    }
                })?;
                let target = root.join(&safe);
                if let Some(parent) = target.parent() {
                    create_dirs(parent, &mut created).map_err(io(parent))?;
                }
                let existed = target.exists();
                write_atomic(&target, data).map_err(io(&target))?;
                if !existed {
                    written.push(target);
                }
            }
            Ok(())
        })();
        if result.is_err() {
            for f in written.iter().rev() {
                let _ = std::fs::remove_file(f);
            }
            for d in created.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        }
        result
    }
}

/// Longest member path `Neff::unpack` writes (the system's `PATH_MAX`).
const UNPACK_MAX_PATH: usize = 4096;
/// Most components of a member path `Neff::unpack` writes.
const UNPACK_MAX_DEPTH: usize = 1024;

/// Create `dir` and its missing ancestors, recording the directories created (outermost
/// first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur.filter(|d| !d.as_os_str().is_empty()) {
        if std::fs::symlink_metadata(d).is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(&d) {
            Ok(()) => created.push(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// An engine stream and the member it came from.
#[derive(Debug)]
pub struct StreamMember {
    /// Member path.
    pub member: String,
    /// The bundles.
    pub stream: EngineStream,
}

/// A sidecar and the member it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct SidecarMember {
    /// Member path.
    pub member: String,
    /// The descriptor blocks.
    pub sidecar: Sidecar,
}

/// One subgraph of a NEFF, parsed and cross-checked.
#[derive(Debug)]
pub struct Subgraph {
    /// Directory (`sg00`; `""` at the root).
    pub dir: String,
    /// Path of its `def.json`.
    pub def_member: String,
    /// The parsed `def.json`.
    pub def: DefJson,
    /// Engine streams present.
    pub streams: BTreeMap<Engine, StreamMember>,
    /// DMA sidecars present.
    pub sidecars: BTreeMap<Engine, SidecarMember>,
    /// The reader that found it.
    pub reader: Reader,
    /// JSON keys of its members that tpbsim does not model.
    pub unmodelled: Vec<Unmodelled>,
    /// Members its JSON names whose content tpbsim does not read (ACT and DVE table images,
    /// the ACT set manifest, debug files), each with what names it.
    pub named: BTreeMap<String, String>,
    /// Every member it reads or names.
    pub used: std::collections::BTreeSet<String>,
}

impl Subgraph {
    /// The member path of a name relative to this subgraph.
    pub fn member_path(&self, name: &str) -> String {
        join(&self.dir, name)
    }

    /// The stream of `engine`, if present.
    pub fn stream(&self, engine: Engine) -> Option<&EngineStream> {
        self.streams.get(&engine).map(|s| &s.stream)
    }

    /// The sidecar of `engine`, if present.
    pub fn sidecar(&self, engine: Engine) -> Option<&Sidecar> {
        self.sidecars.get(&engine).map(|s| &s.sidecar)
    }
}

/// Property-test case count: 256, or `TPBSIM_PROPTEST_CASES`.
#[cfg(test)]
pub(crate) fn proptest_cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod boundary_tests;
