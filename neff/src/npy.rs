//! `.npy` files: read to (descr, shape, raw little-endian C-order bytes) and write back.
//!
//! What is accepted on read:
//! - numpy's standard numeric dtypes `b1 u1 i1 u2 i2 u4 i4 u8 i8 f2 f4 f8` in either byte
//!   order (big-endian data is swapped to little-endian) and either memory order (Fortran
//!   order is rearranged to C order);
//! - void dtypes `V1`, `V2`, `V4`, ... (`|`, `<` or `>` prefix): this is how numpy stores
//!   ml_dtypes' `bfloat16` (`<V2`) and most of its 8-bit floats (`<V1`). The descr alone does
//!   not say which format the bytes hold; [`NpyArray::resolve`] checks them against the dtype a
//!   caller declares (for a NEFF, the variable's `dtype` in `def.json`);
//! - `<f1`/`|f1`, the descr ml_dtypes gives `float8_e5m2` (numpy itself cannot load it), as
//!   `float8_e5m2`.
//!
//! What is written: the standard descr for numpy-native dtypes (`|u1`, `<i4`, `<f2`, ...;
//! `float32r` as `<f4`), and `<V{size}` for every other dtype (`bfloat16` → `<V2`, every 8-bit
//! float → `<V1`, the ×4 packed forms → `<V2`/`<V4`), which numpy loads as void. A file written
//! here reads back with the same shape and bytes, and resolves to the same dtype.

use std::io::{Read, Write};
use std::path::Path;

use npyz::WriterBuilder as _;

use tpbsim_isa::NumFormat;

/// An `.npy` error.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// File-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The header could not be parsed.
    #[error("bad .npy header: {0}")]
    Header(String),
    /// A dtype tpbsim does not read (records, strings, objects, complex, datetimes).
    #[error("unsupported .npy dtype `{0}`")]
    UnsupportedDtype(String),
    /// The data length differs from what the header promises.
    #[error(".npy data holds {actual} bytes; shape {shape:?} × {item} bytes needs {expected}")]
    DataLength {
        /// Shape from the header.
        shape: Vec<u64>,
        /// Bytes per element.
        item: usize,
        /// Bytes needed.
        expected: u64,
        /// Bytes present.
        actual: u64,
    },
    /// The data and the declared dtype disagree.
    #[error("stored dtype `{stored}` cannot hold declared dtype `{declared}`")]
    DtypeMismatch {
        /// descr in the file.
        stored: String,
        /// Declared dtype.
        declared: NumFormat,
    },
    /// The header promises more data than the caller accepts.
    #[error(".npy data of {expected} bytes (shape {shape:?}) exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Shape from the header.
        shape: Vec<u64>,
        /// Bytes the header promises.
        expected: u64,
        /// Bytes accepted.
        limit: u64,
    },
    /// Bytes follow the data the header describes.
    #[error(".npy data is longer than shape {shape:?} × {item} bytes = {expected} bytes")]
    TrailingData {
        /// Shape from the header.
        shape: Vec<u64>,
        /// Bytes per element.
        item: usize,
        /// Bytes needed.
        expected: u64,
    },
    /// Bad arguments to the writer.
    #[error("{0}")]
    Write(String),
}

/// The element type of a stored array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NpyElem {
    /// A dtype the descr names unambiguously.
    Known(NumFormat),
    /// Opaque elements of this many bytes (`V<n>`); see [`NpyArray::resolve`].
    Void(usize),
}

impl NpyElem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            NpyElem::Known(d) => d.container_bytes(),
            NpyElem::Void(n) => n,
        }
    }
}

/// A decoded `.npy` array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyArray {
    /// The descr string as stored (`<f4`, `<V2`, ...).
    pub descr: String,
    /// Element type.
    pub elem: NpyElem,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Element bytes, little-endian, C order.
    pub data: Vec<u8>,
}

impl NpyArray {
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dtype of the data given the dtype a caller declares: a known element type must
    /// equal it (`float32r` may be stored as `float32`); a void element must have its size and
    /// the declared dtype must be one numpy cannot represent natively.
    pub fn resolve(&self, declared: NumFormat) -> Result<NumFormat, NpyError> {
        let ok = match self.elem {
            NpyElem::Known(d) => {
                d == declared || (d == NumFormat::Float32 && declared == NumFormat::Float32r)
            }
            NpyElem::Void(n) => n == declared.container_bytes() && !declared.is_numpy_native(),
        };
        if ok {
            Ok(declared)
        } else {
            Err(NpyError::DtypeMismatch {
                stored: self.descr.clone(),
                declared,
            })
        }
    }
}

fn header_error(e: impl std::fmt::Display) -> NpyError {
    NpyError::Header(e.to_string())
}

/// Offset and length of the header dict text: (text start, text length).
fn dict_span(bytes: &[u8]) -> Result<(usize, usize), NpyError> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(NpyError::Header("missing \\x93NUMPY magic".into()));
    }
    match bytes[6] {
        1 => Ok((10, usize::from(u16::from_le_bytes([bytes[8], bytes[9]])))),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(NpyError::Header("truncated header length".into()));
            }
            let n = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            Ok((12, usize::try_from(n).map_err(header_error)?))
        }
        v => Err(NpyError::Header(format!("unsupported format version {v}"))),
    }
}

/// Read an `.npy` image from memory.
pub fn read_npy(bytes: &[u8]) -> Result<NpyArray, NpyError> {
    let (start, len) = dict_span(bytes)?;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| NpyError::Header("truncated header".into()))?;
    let h = parse_header(bytes[..end].to_vec(), start)?;
    let data = &bytes[end..];
    if data.len() as u64 != h.expected {
        return Err(h.short(data.len() as u64));
    }
    Ok(h.finish(data.to_vec()))
}

/// The largest header (magic, version, length and dict) [`read_npy_from`] accepts.
pub const MAX_HEADER_BYTES: usize = 1 << 20;

/// Read an `.npy` stream whose data is at most `max_data` bytes. The header is read and checked
/// first; the data is then read once, straight into the array's buffer (no second copy of a
/// large input; big-endian data is swapped and Fortran order rearranged afterwards). A stream
/// shorter or longer than the header promises is refused.
pub fn read_npy_from(mut r: impl Read, max_data: u64) -> Result<NpyArray, NpyError> {
    let (h, _) = read_header(&mut r)?;
    read_data(r, h, max_data)
}

fn stream_io(source: std::io::Error) -> NpyError {
    NpyError::Io {
        path: "<stream>".into(),
        source,
    }
}

/// [`read_npy_from`]'s header step: the parsed header and the offset of the data.
fn read_header(mut r: impl Read) -> Result<(Header, usize), NpyError> {
    let truncated = || NpyError::Header("truncated header".into());
    let mut fill = |buf: &mut [u8]| -> Result<(), NpyError> {
        read_full(&mut r, buf)
            .map_err(stream_io)?
            .then_some(())
            .ok_or_else(truncated)
    };
    let mut image = vec![0u8; 10];
    fill(&mut image)?;
    if matches!(image.get(6), Some(2 | 3)) {
        let mut more = [0u8; 2];
        fill(&mut more)?;
        image.extend_from_slice(&more);
    }
    let (start, len) = dict_span(&image)?;
    if start + len > MAX_HEADER_BYTES {
        return Err(NpyError::Header(format!(
            "header of {} bytes (at most {MAX_HEADER_BYTES} accepted)",
            start + len
        )));
    }
    image.resize(start + len, 0);
    fill(&mut image[start..])?;
    let h = parse_header(image, start)?;
    Ok((h, start + len))
}

/// [`read_npy_from`] after its header.
fn read_data(mut r: impl Read, h: Header, max_data: u64) -> Result<NpyArray, NpyError> {
    h.within(max_data)?;
    let want = usize::try_from(h.expected).map_err(header_error)?;
    let mut data = Vec::new();
    data.try_reserve_exact(want)
        .map_err(|e| NpyError::Header(format!("cannot allocate {want} bytes of data: {e}")))?;
    (&mut r)
        .take(h.expected)
        .read_to_end(&mut data)
        .map_err(stream_io)?;
    if data.len() < want {
        return Err(h.short(data.len() as u64));
    }
    let mut probe = [0u8; 1];
    if read_full(&mut r, &mut probe).map_err(stream_io)? {
        return Err(h.trailing());
    }
    Ok(h.finish(data))
}

/// An `.npy` file whose data is mapped in place (little-endian, C order): the data is the
/// file's page-cache pages, neither copied nor zero-filled first. The file must not shrink while
/// the map lives (as for every mapped input of tpbsim; `sim` reports the `SIGBUS` such a change
/// raises as a named error).
pub struct MappedNpy {
    /// The array's descr, element type and shape (its `data` left empty).
    pub meta: NpyArray,
    map: memmap2::Mmap,
    offset: usize,
}

impl AsRef<[u8]> for MappedNpy {
    fn as_ref(&self) -> &[u8] {
        &self.map[self.offset..]
    }
}

/// Map an `.npy` file's data of at most `max_data` bytes in place; `Ok(None)` when it cannot be
/// used as it lies (not a regular file, no data, big-endian or Fortran-ordered data: read it
/// with [`read_npy_from`] instead). A file whose length is not its header's plus the data the
/// header promises is refused.
pub fn map_npy_file(path: &Path, max_data: u64) -> Result<Option<MappedNpy>, NpyError> {
    let io = |source: std::io::Error| NpyError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Ok(None);
    }
    let (h, data_at) = read_header(&mut file).map_err(|e| match e {
        NpyError::Io { source, .. } => io(source),
        e => e,
    })?;
    h.within(max_data)?;
    let actual = meta.len().saturating_sub(data_at as u64);
    if actual < h.expected {
        return Err(h.short(actual));
    }
    if actual > h.expected {
        return Err(h.trailing());
    }
    if h.expected == 0 || h.big || (h.fortran && h.shape.len() > 1) {
        return Ok(None);
    }
    // SAFETY: a read-only private map; the contract is that the file does not shrink while the
    // map lives (a shrink raises SIGBUS, which `sim` reports as a named error).
    // The pages are populated up front: one batched fault-in instead of one fault per page as
    // the run reads (which on a virtual machine costs more than copying the file).
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }.map_err(io)?;
    if map.len() as u64 != data_at as u64 + h.expected {
        return Err(h.short((map.len() as u64).saturating_sub(data_at as u64)));
    }
    Ok(Some(MappedNpy {
        meta: h.finish(Vec::new()),
        map,
        offset: data_at,
    }))
}

/// Fill `buf` from `r`: `Ok(false)` when the stream ends first.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut at = 0;
    while at < buf.len() {
        match r.read(&mut buf[at..]) {
            Ok(0) => return Ok(false),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Refuse a shape whose dimensions (zeros aside) multiply past u64 before the header parser
/// computes its products and strides.
fn check_shape(dict: &[u8]) -> Result<(), NpyError> {
    let Some(key) = find(dict, b"'shape'").or_else(|| find(dict, b"\"shape\"")) else {
        return Ok(());
    };
    let rest = &dict[key..];
    let (Some(open), Some(close)) = (
        rest.iter().position(|&c| c == b'('),
        rest.iter().position(|&c| c == b')'),
    ) else {
        return Ok(());
    };
    if close < open {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&rest[open + 1..close]);
    let mut product = 1u64;
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Ok(d) = part.trim_end_matches('L').parse::<u64>() else {
            return Ok(());
        };
        if d != 0 {
            product = product
                .checked_mul(d)
                .ok_or_else(|| NpyError::Header(format!("shape ({text}) overflows")))?;
        }
    }
    Ok(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A parsed header: what the data must be and how to bring it to little-endian C order.
struct Header {
    descr: String,
    elem: NpyElem,
    shape: Vec<u64>,
    expected: u64,
    big: bool,
    fortran: bool,
}

impl Header {
    /// Refuse data past `limit` bytes before any of it is read.
    fn within(&self, limit: u64) -> Result<(), NpyError> {
        if self.expected > limit {
            return Err(NpyError::TooLarge {
                shape: self.shape.clone(),
                expected: self.expected,
                limit,
            });
        }
        Ok(())
    }

    /// The data length differs from the header's (`actual` bytes present).
    fn short(&self, actual: u64) -> NpyError {
        NpyError::DataLength {
            shape: self.shape.clone(),
            item: self.elem.size(),
            expected: self.expected,
            actual,
        }
    }

    fn trailing(&self) -> NpyError {
        NpyError::TrailingData {
            shape: self.shape.clone(),
            item: self.elem.size(),
            expected: self.expected,
        }
    }

    /// The array over `data` (exactly `expected` bytes), swapped and reordered in place where
    /// needed.
    fn finish(self, mut data: Vec<u8>) -> NpyArray {
        let item = self.elem.size();
        if self.big {
            for chunk in data.chunks_exact_mut(item) {
                chunk.reverse();
            }
        }
        if self.fortran && self.shape.len() > 1 {
            data = fortran_to_c(&data, &self.shape, item);
        }
        NpyArray {
            descr: self.descr,
            elem: self.elem,
            shape: self.shape,
            data,
        }
    }
}

/// Parse the header image (magic through the dict; the dict text starts at `start`).
fn parse_header(mut image: Vec<u8>, start: usize) -> Result<Header, NpyError> {
    check_shape(&image[start..])?;
    // ml_dtypes writes float8_e5m2 as `<f1`, which no npy reader accepts; read it as void
    // (same length, so the header stays valid) and remember what it was.
    let mut e5m2 = false;
    for pat in [&b"'<f1'"[..], b"'|f1'"] {
        if let Some(pos) = find(&image[start..], pat) {
            image[start + pos..start + pos + 5].copy_from_slice(b"'|V1'");
            e5m2 = true;
            break;
        }
    }
    let header = npyz::NpyHeader::from_reader(&mut &image[..]).map_err(header_error)?;
    let npyz::DType::Plain(ts) = header.dtype() else {
        return Err(NpyError::UnsupportedDtype(header.dtype().descr()));
    };
    let descr = if e5m2 {
        "<f1".to_string()
    } else {
        ts.to_string()
    };
    let size = usize::try_from(ts.size_field()).map_err(header_error)?;
    use npyz::TypeChar as C;
    let known = |d: NumFormat| NpyElem::Known(d);
    let elem = match (ts.type_char(), size) {
        (C::RawData, _) if e5m2 => known(NumFormat::Float8E5m2),
        (C::RawData, n) if n > 0 => NpyElem::Void(n),
        (C::Bool, 1) => known(NumFormat::Bool),
        (C::Uint, 1) => known(NumFormat::Uint8),
        (C::Int, 1) => known(NumFormat::Int8),
        (C::Uint, 2) => known(NumFormat::Uint16),
        (C::Int, 2) => known(NumFormat::Int16),
        (C::Uint, 4) => known(NumFormat::Uint32),
        (C::Int, 4) => known(NumFormat::Int32),
        (C::Uint, 8) => known(NumFormat::Uint64),
        (C::Int, 8) => known(NumFormat::Int64),
        (C::Float, 2) => known(NumFormat::Float16),
        (C::Float, 4) => known(NumFormat::Float32),
        (C::Float, 8) => known(NumFormat::Float64),
        _ => return Err(NpyError::UnsupportedDtype(descr)),
    };
    let item = elem.size();
    let shape = header.shape().to_vec();
    let expected = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|c| c.checked_mul(item as u64))
        .ok_or_else(|| NpyError::Header(format!("shape {shape:?} overflows")))?;
    let big =
        ts.endianness() == npyz::Endianness::Big && matches!(elem, NpyElem::Known(_)) && item > 1;
    Ok(Header {
        descr,
        elem,
        shape,
        expected,
        big,
        fortran: header.order() == npyz::Order::Fortran,
    })
}

/// Rearrange Fortran-order element bytes into C order.
fn fortran_to_c(data: &[u8], shape: &[u64], item: usize) -> Vec<u8> {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let n: usize = dims.iter().product();
    // Fortran strides (elements): first dim fastest.
    let mut fstride = vec![1usize; dims.len()];
    for i in 1..dims.len() {
        fstride[i] = fstride[i - 1] * dims[i - 1];
    }
    let mut out = vec![0u8; data.len()];
    let mut idx = vec![0usize; dims.len()];
    for c in 0..n {
        let f: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum();
        out[c * item..(c + 1) * item].copy_from_slice(&data[f * item..(f + 1) * item]);
        // Advance the C-order index (last dim fastest).
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Read an `.npy` file (the data read once, straight into the array's buffer).
pub fn read_npy_file(path: impl AsRef<Path>) -> Result<NpyArray, NpyError> {
    let path = path.as_ref();
    let named = |e: NpyError| match e {
        NpyError::Io { source, .. } => NpyError::Io {
            path: path.display().to_string(),
            source,
        },
        e => e,
    };
    let file = std::fs::File::open(path).map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })?;
    read_npy_from(std::io::BufReader::new(file), u64::MAX).map_err(named)
}

/// The descr tpbsim writes for a dtype.
pub fn descr_for(dtype: NumFormat) -> String {
    match dtype {
        NumFormat::Bool => "|b1".into(),
        NumFormat::Uint8 => "|u1".into(),
        NumFormat::Int8 => "|i1".into(),
        NumFormat::Uint16 => "<u2".into(),
        NumFormat::Int16 => "<i2".into(),
        NumFormat::Uint32 => "<u4".into(),
        NumFormat::Int32 => "<i4".into(),
        NumFormat::Uint64 => "<u8".into(),
        NumFormat::Int64 => "<i8".into(),
        NumFormat::Float16 => "<f2".into(),
        NumFormat::Float32 | NumFormat::Float32r => "<f4".into(),
        NumFormat::Float64 => "<f8".into(),
        other => format!("<V{}", other.container_bytes()),
    }
}

/// The most dimensions an `.npy` array written here has (numpy's `NPY_MAXDIMS`; its header then
/// always fits a version-1 header).
pub const MAX_NPY_DIMS: usize = 64;

/// Encode an `.npy` image: `data` holds the little-endian, C-order element bytes.
pub fn encode_npy(dtype: NumFormat, shape: &[u64], data: &[u8]) -> Result<Vec<u8>, NpyError> {
    if shape.len() > MAX_NPY_DIMS {
        return Err(NpyError::Write(format!(
            "a shape of {} dimensions: an .npy array has at most {MAX_NPY_DIMS} (numpy's limit)",
            shape.len()
        )));
    }
    let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let expected = count.and_then(|c| c.checked_mul(dtype.container_bytes() as u64));
    if expected != Some(data.len() as u64) {
        return Err(NpyError::Write(format!(
            "{} data bytes do not fill shape {shape:?} of {dtype} ({} bytes each)",
            data.len(),
            dtype.container_bytes()
        )));
    }
    let ts: npyz::TypeStr = descr_for(dtype)
        .parse()
        .map_err(|e| NpyError::Write(format!("{e}")))?;
    let mut out = Vec::with_capacity(128 + data.len());
    npyz::WriteOptions::new_header_only()
        .dtype(npyz::DType::Plain(ts))
        .shape(shape)
        .writer(&mut out)
        .write_header_only()
        .map_err(|e| NpyError::Write(e.to_string()))?;
    out.extend_from_slice(data);
    Ok(out)
}

/// Write an `.npy` file atomically (temporary file in the same directory, then rename).
pub fn write_npy_file(
    path: impl AsRef<Path>,
    dtype: NumFormat,
    shape: &[u64],
    data: &[u8],
) -> Result<(), NpyError> {
    let path = path.as_ref();
    let image = encode_npy(dtype, shape, data)?;
    super::write_atomic(path, &image).map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Write an `.npy` image to any writer.
pub fn write_npy<W: Write>(
    mut w: W,
    dtype: NumFormat,
    shape: &[u64],
    data: &[u8],
) -> Result<(), NpyError> {
    let image = encode_npy(dtype, shape, data)?;
    w.write_all(&image).map_err(|source| NpyError::Io {
        path: "<writer>".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_beyond_numpys_dimensions_are_refused() {
        let shape = vec![1u64; MAX_NPY_DIMS];
        assert!(encode_npy(NumFormat::Float32, &shape, &[0; 4]).is_ok());
        let shape = vec![1u64; 22_000];
        let e = encode_npy(NumFormat::Float32, &shape, &[0; 4]).unwrap_err();
        assert!(e.to_string().contains("22000 dimensions"), "{e}");
    }

    #[test]
    fn round_trip_every_dtype() {
        for d in NumFormat::NEFF {
            let shape = [2u64, 3];
            let data: Vec<u8> = (0..6 * d.container_bytes())
                .map(|i| (i * 37 + 5) as u8)
                .collect();
            let image = encode_npy(d, &shape, &data).unwrap();
            let back = read_npy(&image).unwrap();
            assert_eq!(back.shape, shape);
            assert_eq!(back.data, data);
            assert_eq!(back.descr, descr_for(d));
            assert_eq!(back.resolve(d).unwrap(), d, "{d}");
            // Header length keeps the data 64-byte aligned, as numpy does.
            assert_eq!((image.len() - data.len()) % 64, 0);
        }
    }

    #[test]
    fn void_needs_a_matching_declaration() {
        let image = encode_npy(NumFormat::Bfloat16, &[2], &[0, 0x3F, 0, 0x40]).unwrap();
        let a = read_npy(&image).unwrap();
        assert_eq!(a.elem, NpyElem::Void(2));
        assert_eq!(a.descr, "<V2");
        assert!(
            a.resolve(NumFormat::Float16).is_err(),
            "a native dtype is never stored as void"
        );
        assert!(a.resolve(NumFormat::Float8E4m3fn).is_err(), "size differs");
        let f = read_npy(&encode_npy(NumFormat::Float32, &[1], &[0; 4]).unwrap()).unwrap();
        assert_eq!(f.resolve(NumFormat::Float32r).unwrap(), NumFormat::Float32r);
        assert!(f.resolve(NumFormat::Int32).is_err());
    }

    /// Byte-for-byte what numpy 2.x `np.save` writes for `np.arange(6, dtype='>i2').reshape(2, 3)`
    /// in Fortran order, for a big-endian, column-major array.
    #[test]
    fn big_endian_fortran_is_normalised() {
        let dict = b"{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }";
        let mut image = b"\x93NUMPY\x01\x00".to_vec();
        let pad = 64 - (10 + dict.len() + 1) % 64;
        let hlen = dict.len() + pad + 1;
        image.extend_from_slice(&(hlen as u16).to_le_bytes());
        image.extend_from_slice(dict);
        image.extend(std::iter::repeat_n(b' ', pad));
        image.push(b'\n');
        // Column-major storage of [[0,1,2],[3,4,5]]: 0 3 1 4 2 5, big-endian.
        for v in [0u16, 3, 1, 4, 2, 5] {
            image.extend_from_slice(&v.to_be_bytes());
        }
        let a = read_npy(&image).unwrap();
        assert_eq!(a.elem, NpyElem::Known(NumFormat::Int16));
        let vals: Vec<u16> = a
            .data
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(vals, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn ml_dtypes_e5m2_descr() {
        let mut image = encode_npy(NumFormat::Float8E5m2, &[3], &[1, 2, 3]).unwrap();
        let pos = find(&image, b"'<V1'").unwrap();
        image[pos..pos + 5].copy_from_slice(b"'<f1'");
        let a = read_npy(&image).unwrap();
        assert_eq!(a.elem, NpyElem::Known(NumFormat::Float8E5m2));
        assert_eq!(a.descr, "<f1");
        assert_eq!(a.data, vec![1, 2, 3]);
    }

    #[test]
    fn errors() {
        assert!(matches!(read_npy(b"nope"), Err(NpyError::Header(_))));
        let image = encode_npy(NumFormat::Int32, &[4], &[0; 16]).unwrap();
        assert!(matches!(
            read_npy(&image[..image.len() - 1]),
            Err(NpyError::DataLength { .. })
        ));
        assert!(matches!(read_npy(&image[..20]), Err(NpyError::Header(_))));
        assert!(matches!(
            encode_npy(NumFormat::Int32, &[4], &[0; 15]),
            Err(NpyError::Write(_))
        ));
        let mut c = encode_npy(NumFormat::Int64, &[1], &[0; 8]).unwrap();
        let pos = find(&c, b"'<i8'").unwrap();
        c[pos..pos + 5].copy_from_slice(b"'<c8'");
        assert!(matches!(read_npy(&c), Err(NpyError::UnsupportedDtype(_))));
    }

    /// Files numpy 2.x and ml_dtypes wrote (`testdata/neff/make_fixtures.py`), with the bytes
    /// numpy reports for them.
    #[test]
    fn reads_files_numpy_wrote() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/neff/npy");
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        let map = expected.as_object().unwrap();
        assert!(map.len() >= 10);
        for (name, e) in map {
            let a = read_npy_file(dir.join(name)).unwrap_or_else(|err| panic!("{name}: {err}"));
            let shape: Vec<u64> = e["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert_eq!(a.shape, shape, "{name}");
            assert_eq!(a.descr, e["descr"].as_str().unwrap(), "{name}");
            let hex: String = a.data.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex, e["hex"].as_str().unwrap(), "{name}");
        }
        let resolve =
            |f: &str, d: NumFormat| read_npy_file(dir.join(f)).unwrap().resolve(d).unwrap();
        assert_eq!(
            resolve("bf16_ml_dtypes.npy", NumFormat::Bfloat16),
            NumFormat::Bfloat16
        );
        assert_eq!(
            resolve("e4m3fn_ml_dtypes.npy", NumFormat::Float8E4m3fn),
            NumFormat::Float8E4m3fn
        );
        assert_eq!(
            resolve("e5m2_ml_dtypes.npy", NumFormat::Float8E5m2),
            NumFormat::Float8E5m2
        );
        assert_eq!(
            resolve("i2_big_fortran.npy", NumFormat::Int16),
            NumFormat::Int16
        );
        assert_eq!(resolve("bool.npy", NumFormat::Bool), NumFormat::Bool);
        // The bfloat16 bytes are numpy's: 1.0 = 0x3F80 little-endian.
        assert_eq!(
            &read_npy_file(dir.join("bf16_ml_dtypes.npy")).unwrap().data[..2],
            &[0x80, 0x3F]
        );
    }

    fn image_with(descr: &str, fortran: bool, shape: &str, data: usize) -> Vec<u8> {
        let order = if fortran { "True" } else { "False" };
        let dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
        let mut image = b"\x93NUMPY\x01\x00".to_vec();
        image.extend_from_slice(&(dict.len() as u16 + 1).to_le_bytes());
        image.extend_from_slice(dict.as_bytes());
        image.push(b'\n');
        image.extend(std::iter::repeat_n(0x5Au8, data));
        image
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(), ..Default::default() })]
        #[test]
        fn any_header_never_panics(
            dims in proptest::collection::vec(proptest::prop_oneof![0u64..5, proptest::prelude::any::<u64>()], 0..5),
            descr in proptest::sample::select(vec!["<f4", ">i2", "|u1", "<V2", "<f1", "|V0", "<U3", "|O", "<c8", "<m8[s]"]),
            fortran in proptest::prelude::any::<bool>(),
            data in 0usize..200,
        ) {
            let shape = format!("({})", dims.iter().map(|d| format!("{d},")).collect::<String>());
            let image = image_with(descr, fortran, &shape, data);
            let streamed = read_npy_from(&image[..], u64::MAX);
            match read_npy(&image) {
                Ok(a) => {
                    proptest::prop_assert_eq!(a.data.len() as u64, a.len() * a.elem.size() as u64);
                    proptest::prop_assert_eq!(streamed.ok(), Some(a));
                }
                Err(_) => proptest::prop_assert!(streamed.is_err()),
            }
        }
    }

    /// The streaming reader: the same arrays as the in-memory one, the data limit at its bound,
    /// and a named error for every stream that ends early or runs on.
    #[test]
    fn streamed_reads_equal_in_memory_reads_and_refuse_bad_lengths() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/neff/npy");
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "npy") {
                let bytes = std::fs::read(&p).unwrap();
                let a = read_npy(&bytes).unwrap();
                assert_eq!(read_npy_from(&bytes[..], u64::MAX).unwrap(), a, "{p:?}");
                assert_eq!(read_npy_file(&p).unwrap(), a, "{p:?}");
                // Mapped in place when the bytes lie as the array's; else left to the reader.
                match map_npy_file(&p, u64::MAX).unwrap() {
                    Some(m) => {
                        assert_eq!(m.as_ref(), &a.data[..], "{p:?}");
                        assert_eq!(
                            (m.meta.descr.as_str(), &m.meta.shape),
                            (a.descr.as_str(), &a.shape)
                        );
                    }
                    None => assert!(
                        a.data.is_empty()
                            || bytes.windows(5).any(|w| w == b"'>i2'" || w == b"True,"),
                        "{p:?} is little-endian C order and not empty"
                    ),
                }
                seen += 1;
            }
        }
        assert!(seen >= 10);
        let image = encode_npy(NumFormat::Int32, &[4], &[7; 16]).unwrap();
        // The limit: 16 data bytes accepted at 16, refused at 15.
        assert_eq!(read_npy_from(&image[..], 16).unwrap().data, vec![7; 16]);
        assert!(matches!(
            read_npy_from(&image[..], 15),
            Err(NpyError::TooLarge {
                expected: 16,
                limit: 15,
                ..
            })
        ));
        // One byte short, one byte over.
        assert!(matches!(
            read_npy_from(&image[..image.len() - 1], 16),
            Err(NpyError::DataLength {
                expected: 16,
                actual: 15,
                ..
            })
        ));
        let mut over = image.clone();
        over.push(0);
        assert!(matches!(
            read_npy_from(&over[..], 1 << 20),
            Err(NpyError::TrailingData { expected: 16, .. })
        ));
        assert!(matches!(
            read_npy(&over),
            Err(NpyError::DataLength {
                expected: 16,
                actual: 17,
                ..
            })
        ));
        // The mapped reader: the same limit and length checks, by file.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.npy");
        std::fs::write(&f, &image).unwrap();
        assert_eq!(map_npy_file(&f, 16).unwrap().unwrap().as_ref(), &[7; 16]);
        assert!(matches!(
            map_npy_file(&f, 15),
            Err(NpyError::TooLarge { .. })
        ));
        std::fs::write(&f, &image[..image.len() - 1]).unwrap();
        assert!(matches!(
            map_npy_file(&f, 16),
            Err(NpyError::DataLength {
                expected: 16,
                actual: 15,
                ..
            })
        ));
        std::fs::write(&f, &over).unwrap();
        assert!(matches!(
            map_npy_file(&f, 16),
            Err(NpyError::TrailingData { .. })
        ));
        assert!(matches!(
            map_npy_file(&dir.path().join("missing.npy"), 16),
            Err(NpyError::Io { .. })
        ));
        assert!(
            map_npy_file(dir.path(), 16).unwrap().is_none(),
            "a directory is not mapped"
        );
        // Every cut inside the header is a header error, never a panic.
        let data_at = image.len() - 16;
        for cut in 0..data_at {
            assert!(
                matches!(read_npy_from(&image[..cut], 16), Err(NpyError::Header(_))),
                "cut at {cut}"
            );
        }
        // A version-2 header (4-byte length) and a header past the accepted size.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        let dict = b"{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }\n";
        v2.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        v2.extend_from_slice(dict);
        v2.extend_from_slice(&[1, 0, 2, 0]);
        assert_eq!(read_npy_from(&v2[..], 4).unwrap().data, vec![1, 0, 2, 0]);
        let mut huge = b"\x93NUMPY\x02\x00".to_vec();
        huge.extend_from_slice(&(MAX_HEADER_BYTES as u32).to_le_bytes());
        assert!(matches!(
            read_npy_from(&huge[..], u64::MAX),
            Err(NpyError::Header(m)) if m.contains("at most")
        ));
        // A stream that never ends is read no further than the limit.
        let endless = image[..data_at]
            .iter()
            .copied()
            .chain(std::iter::repeat(0u8));
        let endless = std::io::Cursor::new(endless.take(1 << 24).collect::<Vec<u8>>());
        assert!(matches!(
            read_npy_from(endless, 16),
            Err(NpyError::TrailingData { .. })
        ));
    }

    #[test]
    fn hostile_shapes() {
        let shapes = [
            "(18446744073709551615, 2)",
            "(4294967296, 4294967296, 16)",
            "(4294967296, 4294967296, 0)",
            "(-1,)",
            "(1.5,)",
            // A closing bracket before the opening one.
            "2), 'x': (3,",
        ];
        for shape in shapes {
            let image = image_with("<f4", true, shape, 64);
            assert!(read_npy(&image).is_err(), "{shape}");
        }
    }

    #[test]
    fn only_arrays_laid_out_as_c_order_are_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..24).collect();
        let file = |name: &str, fortran: bool, shape: &str| {
            let mut image = image_with("<f4", fortran, shape, 0);
            image.extend_from_slice(&data);
            let p = dir.path().join(name);
            std::fs::write(&p, image).unwrap();
            p
        };
        // One dimension (or C order): the file's bytes are the array's.
        for (name, fortran, shape) in [("c2.npy", false, "(2, 3)"), ("f1.npy", true, "(6,)")] {
            let m = map_npy_file(&file(name, fortran, shape), u64::MAX).unwrap();
            assert_eq!(m.as_ref().map(|m| m.as_ref()), Some(&data[..]), "{name}");
        }
        // Fortran order in two dimensions: left to the reader, which reorders.
        let f2 = file("f2.npy", true, "(2, 3)");
        assert!(map_npy_file(&f2, u64::MAX).unwrap().is_none());
        assert_ne!(read_npy_file(&f2).unwrap().data, data);
    }

    #[test]
    fn file_round_trip_is_atomic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.npy");
        write_npy_file(&p, NumFormat::Bfloat16, &[2, 2], &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let a = read_npy_file(&p).unwrap();
        assert_eq!(a.data, vec![1, 2, 3, 4, 5, 6, 7, 8]);
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temporary file left behind");
        assert!(matches!(
            read_npy_file(dir.path().join("missing.npy")),
            Err(NpyError::Io { .. })
        ));
    }
}
