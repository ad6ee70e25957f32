//! The tar payload: a guarded reader and a deterministic writer.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::rc::Rc;

use super::{Limits, NeffError};

/// gzip magic bytes.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];

/// Whether `bytes` starts like a gzip stream.
pub(crate) fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// Whether `bytes` starts like a POSIX tar (ustar magic at 257).
pub(crate) fn is_tar(bytes: &[u8]) -> bool {
    bytes.len() >= 263 && &bytes[257..262] == b"ustar"
}

/// A reader that refuses to yield more than `budget` bytes and records that it tripped.
struct Budget<R> {
    inner: R,
    remaining: u64,
    tripped: Rc<Cell<bool>>,
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            // Probe one byte: only a stream that really continues is too large.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.tripped.set(true);
                    Err(io::Error::other(
                        "decompressed archive exceeds the size limit",
                    ))
                }
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// `name` with its control characters escaped (`\u{1b}`), for messages.
pub(crate) fn printable(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Normalise a member path: strip leading `./`, drop `.` and empty components, refuse
/// absolute paths, `..`, backslashes, NUL and non-UTF-8 names.
pub(crate) fn normalize_member_path(raw: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "name is not UTF-8".to_string())?;
    if text.is_empty() {
        return Err("empty name".into());
    }
    if text.starts_with('/') {
        return Err("absolute path".into());
    }
    if text.contains('\0') {
        return Err("name contains NUL".into());
    }
    if text.contains('\\') {
        return Err("name contains a backslash".into());
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "name contains the control character U+{:04X} (a terminal would act on it)",
            c as u32
        ));
    }
    let mut parts = Vec::new();
    for comp in text.split('/') {
        match comp {
            "" | "." => {}
            ".." => return Err("path escapes the archive root (`..`)".into()),
            c if c.len() >= 2
                && c.as_bytes()[1] == b':'
                && c.as_bytes()[0].is_ascii_alphabetic()
                && parts.is_empty() =>
            {
                return Err("drive-qualified path".into())
            }
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Err("name has no components".into());
    }
    Ok(parts.join("/"))
}

/// Classify an I/O error from the decompressor or the tar reader.
fn archive_error(e: io::Error, tripped: &Cell<bool>, limits: &Limits, context: &str) -> NeffError {
    if tripped.get() {
        return NeffError::ArchiveTooLarge {
            limit: limits.max_total_bytes,
        };
    }
    let detail = if context.is_empty() {
        e.to_string()
    } else {
        format!("{context}: {e}")
    };
    let msg = e.to_string();
    if e.kind() == io::ErrorKind::UnexpectedEof
        || msg.contains("failed to read entire block")
        || msg.contains("unexpected EOF")
        || msg.contains("unexpected end of file")
    {
        NeffError::TruncatedArchive { detail }
    } else {
        NeffError::CorruptArchive { detail }
    }
}

/// Members by normalised path, and the offset in the payload just past the archive.
pub(crate) type Members = (BTreeMap<String, Vec<u8>>, usize);

/// Read every regular-file member of a tar (gzip or plain) payload, enforcing `limits`. The tar
/// is read up to its end-of-archive marker (as the runtime's libarchive walk does); a gzip
/// payload is read as one gzip member, whose trailer (CRC-32 and length) is checked. Returns
/// the members and where the archive ends in `payload`: the end of the gzip member, or the
/// whole payload for a plain tar. What follows a gzip member is the caller's to check.
pub(crate) fn read_members(payload: &[u8], limits: &Limits) -> Result<Members, NeffError> {
    let tripped = Rc::new(Cell::new(false));
    // Room for tar headers, padding and extension records on top of the member bytes.
    let overhead = (limits.max_members as u64)
        .saturating_add(2)
        .saturating_mul(4 * 512)
        .saturating_add(1 << 20);
    let budget = limits.max_total_bytes.saturating_add(overhead);
    // The gzip decoder reads through a slice that tracks how far it got, so the caller can
    // check what follows the first gzip member (zero padding up to data_size).
    let consumed = Rc::new(Cell::new(0usize));
    let gzip = is_gzip(payload);
    let inner: Box<dyn Read + '_> = if gzip {
        Box::new(flate2::bufread::GzDecoder::new(Tracked {
            data: payload,
            pos: Rc::clone(&consumed),
        }))
    } else {
        Box::new(payload)
    };
    let reader = Budget {
        inner,
        remaining: budget,
        tripped: Rc::clone(&tripped),
    };
    let mut archive = tar::Archive::new(reader);
    let mut members = BTreeMap::new();
    let mut total: u64 = 0;
    let mut count: usize = 0;
    {
        let entries = archive
            .entries()
            .map_err(|e| archive_error(e, &tripped, limits, ""))?;
        for entry in entries {
            let mut entry =
                entry.map_err(|e| archive_error(e, &tripped, limits, "reading a member header"))?;
            count += 1;
            if count > limits.max_members {
                return Err(NeffError::TooManyMembers {
                    limit: limits.max_members,
                });
            }
            let raw_path = entry.path_bytes().into_owned();
            let shown = printable(&String::from_utf8_lossy(&raw_path));
            let kind = entry.header().entry_type();
            use tar::EntryType as T;
            let is_file = match kind {
                T::Regular | T::Continuous => true,
                T::Directory | T::XGlobalHeader => false,
                T::Symlink => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "symbolic link",
                    })
                }
                T::Link => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "hard link",
                    })
                }
                T::Char => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "character device",
                    })
                }
                T::Block => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "block device",
                    })
                }
                T::Fifo => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "FIFO",
                    })
                }
                T::GNUSparse => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "sparse file",
                    })
                }
                _ => {
                    return Err(NeffError::UnsupportedEntry {
                        member: shown,
                        kind: "unknown entry type",
                    })
                }
            };
            if kind == T::XGlobalHeader {
                continue;
            }
            let name =
                normalize_member_path(&raw_path).map_err(|reason| NeffError::UnsafePath {
                    member: shown.clone(),
                    reason,
                })?;
            if !is_file {
                continue;
            }
            let size = entry.size();
            if size > limits.max_member_bytes {
                return Err(NeffError::MemberTooLarge {
                    member: name,
                    size,
                    limit: limits.max_member_bytes,
                });
            }
            total = total.saturating_add(size);
            if total > limits.max_total_bytes {
                return Err(NeffError::ArchiveTooLarge {
                    limit: limits.max_total_bytes,
                });
            }
            if members.contains_key(&name) {
                return Err(NeffError::DuplicateMember { member: name });
            }
            // The member's whole size at once (within the limits checked above): growing a
            // buffer by doubling would copy a large member several times over and leave the
            // smaller buffers behind in the allocator. Where the memory cannot be reserved,
            // the buffer grows as the bytes arrive instead.
            let mut data = Vec::new();
            if data
                .try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
                .is_err()
            {
                data.reserve(usize::try_from(size.min(1 << 24)).unwrap_or(0));
            }
            entry
                .read_to_end(&mut data)
                .map_err(|e| archive_error(e, &tripped, limits, &format!("member `{name}`")))?;
            if data.len() as u64 != size {
                return Err(NeffError::TruncatedArchive {
                    detail: format!("member `{name}` holds {} of its {size} bytes", data.len()),
                });
            }
            members.insert(name, data);
        }
    }
    // Drain the rest of the member so the gzip trailer (CRC-32 and length) is checked.
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink())
        .map_err(|e| archive_error(e, &tripped, limits, "after the last member"))?;
    let end = if gzip { consumed.get() } else { payload.len() };
    Ok((members, end))
}

/// A byte slice read through `BufRead`, recording how many bytes were consumed.
struct Tracked<'a> {
    data: &'a [u8],
    pos: Rc<Cell<usize>>,
}

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.data[self.pos.get()..];
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos.set(self.pos.get() + n);
        Ok(n)
    }
}

impl io::BufRead for Tracked<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(&self.data[self.pos.get()..])
    }

    fn consume(&mut self, n: usize) {
        self.pos.set((self.pos.get() + n).min(self.data.len()));
    }
}

/// uid/gid of `nobody`.
const NOBODY_ID: u64 = 65534;

/// Write members as a deterministic POSIX (pax) tar: sorted names, mode 0644, owner and group
/// `nobody`, zero timestamps; names too long for a ustar header get a pax `path` record.
pub(crate) fn write_tar<W: Write>(out: W, members: &BTreeMap<String, Vec<u8>>) -> io::Result<W> {
    let mut builder = tar::Builder::new(out);
    for (name, data) in members {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_uid(NOBODY_ID);
        h.set_gid(NOBODY_ID);
        h.set_mtime(0);
        h.set_username("nobody")?;
        h.set_groupname("nobody")?;
        if h.set_path(name).is_err() {
            builder.append_pax_extensions([("path", name.as_bytes())])?;
            let short: String = name
                .chars()
                .rev()
                .take(90)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let short = short.trim_start_matches('/');
            h.set_path(short).or_else(|_| h.set_path("pax-long-name"))?;
        }
        h.set_cksum();
        builder.append(&h, data.as_slice())?;
    }
    builder.into_inner()
}

/// gzip (level 1, zero mtime) a tar of `members`.
pub(crate) fn write_gzip_tar(members: &BTreeMap<String, Vec<u8>>) -> io::Result<Vec<u8>> {
    let enc = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(1));
    write_tar(enc, members)?.finish()
}

/// A plain tar of `members`.
pub(crate) fn write_plain_tar(members: &BTreeMap<String, Vec<u8>>) -> io::Result<Vec<u8>> {
    write_tar(Vec::new(), members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization() {
        assert_eq!(
            normalize_member_path(b"./sg00/def.json").unwrap(),
            "sg00/def.json"
        );
        assert_eq!(normalize_member_path(b"a//b/./c").unwrap(), "a/b/c");
        assert_eq!(normalize_member_path(b"dir/").unwrap(), "dir");
        for bad in [
            &b"../x"[..],
            b"a/../../b",
            b"/etc/passwd",
            b"",
            b".",
            b"./",
            b"a\\b",
            b"C:evil",
            b"\xff\xfe",
            b"sg00/\x1b[2Jdef.json",
            b"a\nb",
        ] {
            assert!(
                normalize_member_path(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // `..` inside a name is fine; only a whole component escapes.
        assert_eq!(normalize_member_path(b"a/..b").unwrap(), "a/..b");
        assert_eq!(printable("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }

    #[test]
    fn long_names_use_pax() {
        let mut m = BTreeMap::new();
        let long = format!("{}/{}", "d".repeat(200), "f".repeat(120));
        m.insert(long.clone(), b"hello".to_vec());
        m.insert("short".to_string(), Vec::new());
        let bytes = write_gzip_tar(&m).unwrap();
        let (back, end) = read_members(&bytes, &Limits::default()).unwrap();
        assert_eq!(back, m);
        assert_eq!(end, bytes.len());
    }

    #[test]
    fn the_archive_ends_with_its_gzip_member() {
        let mut m = BTreeMap::new();
        m.insert("a".to_string(), b"hello".to_vec());
        let gz = write_gzip_tar(&m).unwrap();
        // Whatever follows the member is left to the caller, zero or not.
        for tail in [&[0u8; 100][..], b"\x1f\x8b junk"] {
            let mut padded = gz.clone();
            padded.extend_from_slice(tail);
            let (back, end) = read_members(&padded, &Limits::default()).unwrap();
            assert_eq!((back, end), (m.clone(), gz.len()));
        }
        // A plain tar ends with its payload.
        let tar = write_plain_tar(&m).unwrap();
        assert_eq!(read_members(&tar, &Limits::default()).unwrap().1, tar.len());
    }

    #[test]
    fn a_large_member_is_read_into_a_buffer_of_its_exact_size() {
        // Larger than the 16 MiB first reservation of a buffer grown as bytes arrive, and not
        // a power of two: a doubled buffer would have spare capacity (and would have been
        // copied on the way).
        let mut m = BTreeMap::new();
        m.insert("big".to_string(), vec![7u8; (17 << 20) + 64]);
        m.insert("small".to_string(), vec![1u8; 100]);
        for bytes in [write_gzip_tar(&m).unwrap(), write_plain_tar(&m).unwrap()] {
            let (back, _) = read_members(&bytes, &Limits::default()).unwrap();
            assert_eq!(back, m);
            for (name, data) in &back {
                assert_eq!(data.capacity(), data.len(), "{name}");
            }
        }
    }

    #[test]
    fn writer_is_deterministic() {
        let mut m = BTreeMap::new();
        m.insert("b".to_string(), vec![1u8; 1000]);
        m.insert("a".to_string(), vec![2u8; 10]);
        let x = write_gzip_tar(&m).unwrap();
        let y = write_gzip_tar(&m).unwrap();
        assert_eq!(x, y);
        let plain = write_plain_tar(&m).unwrap();
        assert!(is_tar(&plain));
        // Sorted order, owner nobody, zero mtime.
        let mut ar = tar::Archive::new(&plain[..]);
        let names: Vec<String> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                assert_eq!(e.header().mtime().unwrap(), 0);
                assert_eq!(e.header().username().unwrap(), Some("nobody"));
                assert_eq!(e.header().uid().unwrap(), NOBODY_ID);
                e.path().unwrap().display().to_string()
            })
            .collect();
        assert_eq!(names, vec!["a", "b"]);
    }
}
