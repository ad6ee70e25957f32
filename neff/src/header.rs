//! The 1024-byte NEFF header (`neff_header_t`, the runtime's DWARF layout).
//!
//! All multi-byte fields are little-endian. The archive payload always starts at byte 1024,
//! whatever `header_size` says.

use md5::Digest as _;

/// Size of the header region; the archive payload starts here.
pub const HEADER_LEN: usize = 1024;

/// `pkg_version` of a plain tar payload whose SHA-256 fills `hash`.
pub const PKG_TAR_SHA256: u64 = 1;
/// `pkg_version` of a gzip tar payload whose MD5 fills `hash[0..16]`.
pub const PKG_GZIP_MD5: u64 = 2;

pub use super::features::{FEATURE_REJECT_MASK, FEATURE_SUPPORTED};

/// Field offsets (bytes from the start of the file).
pub mod offset {
    /// `pkg_version` (u64).
    pub const PKG_VERSION: usize = 0x000;
    /// `header_size` (u64).
    pub const HEADER_SIZE: usize = 0x008;
    /// `data_size` (u64).
    pub const DATA_SIZE: usize = 0x010;
    /// `neff_version_major` (u64).
    pub const VERSION_MAJOR: usize = 0x018;
    /// `neff_version_minor` (u64).
    pub const VERSION_MINOR: usize = 0x020;
    /// `build_version[128]`.
    pub const BUILD_VERSION: usize = 0x028;
    /// `num_tpb` (u32; the runtime's DWARF calls these four bytes unused).
    pub const NUM_TPB: usize = 0x0A8;
    /// `hash[32]`.
    pub const HASH: usize = 0x0AC;
    /// `uuid[16]`.
    pub const UUID: usize = 0x0CC;
    /// `name[256]`.
    pub const NAME: usize = 0x0DC;
    /// `requested_tpb_count` (u32).
    pub const REQUESTED_TPB_COUNT: usize = 0x1DC;
    /// `tpb_per_node[64]`.
    pub const TPB_PER_NODE: usize = 0x1E0;
    /// `feature_bits` (u64).
    pub const FEATURE_BITS: usize = 0x220;
    /// `lnc_size` (u32; `vnc_size` in the runtime's DWARF).
    pub const LNC_SIZE: usize = 0x228;
    /// Reserved padding up to 0x400.
    pub const RESERVED: usize = 0x22C;
}

/// Length of the reserved tail (0x22C..0x400).
pub const RESERVED_LEN: usize = HEADER_LEN - offset::RESERVED;

/// The NEFF header, field for field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// 1 = plain tar + SHA-256, 2 = gzip tar + MD5.
    pub pkg_version: u64,
    /// Header region size as recorded (tpbsim writes 1024).
    pub header_size: u64,
    /// Payload byte count (the archive after byte 1024).
    pub data_size: u64,
    /// NEFF format major version (the runtime accepts up to 2).
    pub neff_version_major: u64,
    /// NEFF format minor version.
    pub neff_version_minor: u64,
    /// Compiler build tag, NUL padded.
    pub build_version: [u8; 128],
    /// Four bytes at 0xA8 (`unused` in the runtime's DWARF), exposed as `num_tpb`.
    pub num_tpb: u32,
    /// Payload digest: SHA-256 (pkg 1) or MD5 in the first 16 bytes (pkg 2).
    pub hash: [u8; 32],
    /// 128-bit identifier.
    pub uuid: [u8; 16],
    /// Model name, NUL padded.
    pub name: [u8; 256],
    /// Requested NeuronCore count.
    pub requested_tpb_count: u32,
    /// Per-node TPB map.
    pub tpb_per_node: [u8; 64],
    /// Feature bitmask.
    pub feature_bits: u64,
    /// Logical NeuronCore size (`vnc_size` in the runtime's DWARF).
    pub lnc_size: u32,
    /// Reserved tail bytes, kept verbatim.
    pub reserved: [u8; RESERVED_LEN],
}

impl Default for Header {
    fn default() -> Self {
        Header {
            pkg_version: PKG_GZIP_MD5,
            header_size: HEADER_LEN as u64,
            data_size: 0,
            neff_version_major: 2,
            neff_version_minor: 0,
            build_version: [0; 128],
            num_tpb: 0,
            hash: [0; 32],
            uuid: [0; 16],
            name: [0; 256],
            requested_tpb_count: 0,
            tpb_per_node: [0; 64],
            feature_bits: 0,
            lnc_size: 0,
            reserved: [0; RESERVED_LEN],
        }
    }
}

fn u64_at(b: &[u8; HEADER_LEN], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

fn u32_at(b: &[u8; HEADER_LEN], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

fn array_at<const N: usize>(b: &[u8; HEADER_LEN], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// The text of a NUL-padded byte field (up to the first NUL, invalid UTF-8 replaced).
pub fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// Why a text header field (`name`, `build_version`) refused a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderTextError {
    /// The text and its terminating NUL do not fit the field.
    #[error("{field} is {len} bytes; at most {max} fit")]
    TooLong {
        /// The field's name.
        field: &'static str,
        /// The text's length in bytes.
        len: usize,
        /// The most bytes the field holds before its terminating NUL.
        max: usize,
    },
    /// The text holds a NUL byte, which would end it early.
    #[error("{field} contains a NUL byte")]
    Nul {
        /// The field's name.
        field: &'static str,
    },
}

/// Fill a NUL-padded field from text; the text must leave room for a terminating NUL.
fn set_c_string(field: &mut [u8], what: &'static str, text: &str) -> Result<(), HeaderTextError> {
    let bytes = text.as_bytes();
    if bytes.len() >= field.len() {
        return Err(HeaderTextError::TooLong {
            field: what,
            len: bytes.len(),
            max: field.len() - 1,
        });
    }
    if bytes.contains(&0) {
        return Err(HeaderTextError::Nul { field: what });
    }
    field.fill(0);
    field[..bytes.len()].copy_from_slice(bytes);
    Ok(())
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Header {
    /// Parse the 1024 header bytes. Never fails: every bit pattern is a header; the checks
    /// against the file live in the reader.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Header {
        use offset::*;
        Header {
            pkg_version: u64_at(b, PKG_VERSION),
            header_size: u64_at(b, HEADER_SIZE),
            data_size: u64_at(b, DATA_SIZE),
            neff_version_major: u64_at(b, VERSION_MAJOR),
            neff_version_minor: u64_at(b, VERSION_MINOR),
            build_version: array_at(b, BUILD_VERSION),
            num_tpb: u32_at(b, NUM_TPB),
            hash: array_at(b, HASH),
            uuid: array_at(b, UUID),
            name: array_at(b, NAME),
            requested_tpb_count: u32_at(b, REQUESTED_TPB_COUNT),
            tpb_per_node: array_at(b, TPB_PER_NODE),
            feature_bits: u64_at(b, FEATURE_BITS),
            lnc_size: u32_at(b, LNC_SIZE),
            reserved: array_at(b, RESERVED),
        }
    }

    /// The 1024 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        use offset::*;
        let mut b = [0u8; HEADER_LEN];
        b[PKG_VERSION..PKG_VERSION + 8].copy_from_slice(&self.pkg_version.to_le_bytes());
        b[HEADER_SIZE..HEADER_SIZE + 8].copy_from_slice(&self.header_size.to_le_bytes());
        b[DATA_SIZE..DATA_SIZE + 8].copy_from_slice(&self.data_size.to_le_bytes());
        b[VERSION_MAJOR..VERSION_MAJOR + 8].copy_from_slice(&self.neff_version_major.to_le_bytes());
        b[VERSION_MINOR..VERSION_MINOR + 8].copy_from_slice(&self.neff_version_minor.to_le_bytes());
        b[BUILD_VERSION..BUILD_VERSION + 128].copy_from_slice(&self.build_version);
        b[NUM_TPB..NUM_TPB + 4].copy_from_slice(&self.num_tpb.to_le_bytes());
        b[HASH..HASH + 32].copy_from_slice(&self.hash);
        b[UUID..UUID + 16].copy_from_slice(&self.uuid);
        b[NAME..NAME + 256].copy_from_slice(&self.name);
        b[REQUESTED_TPB_COUNT..REQUESTED_TPB_COUNT + 4]
            .copy_from_slice(&self.requested_tpb_count.to_le_bytes());
        b[TPB_PER_NODE..TPB_PER_NODE + 64].copy_from_slice(&self.tpb_per_node);
        b[FEATURE_BITS..FEATURE_BITS + 8].copy_from_slice(&self.feature_bits.to_le_bytes());
        b[LNC_SIZE..LNC_SIZE + 4].copy_from_slice(&self.lnc_size.to_le_bytes());
        b[RESERVED..].copy_from_slice(&self.reserved);
        b
    }

    /// The model name as text.
    pub fn name_str(&self) -> String {
        c_string(&self.name)
    }

    /// Set the model name (at most 255 bytes, no NUL).
    pub fn set_name(&mut self, name: &str) -> Result<(), HeaderTextError> {
        set_c_string(&mut self.name, "name", name)
    }

    /// The build tag as text.
    pub fn build_version_str(&self) -> String {
        c_string(&self.build_version)
    }

    /// Set the build tag (at most 127 bytes, no NUL).
    pub fn set_build_version(&mut self, tag: &str) -> Result<(), HeaderTextError> {
        set_c_string(&mut self.build_version, "build_version", tag)
    }

    /// The UUID in its canonical 8-4-4-4-12 form.
    pub fn uuid_str(&self) -> String {
        let h = hex(&self.uuid);
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    /// The part of `hash` the package version uses: 16 bytes of MD5 (pkg 2), 32 bytes of
    /// SHA-256 (pkg 1), the whole field otherwise.
    pub fn digest(&self) -> &[u8] {
        match self.pkg_version {
            PKG_GZIP_MD5 => &self.hash[..16],
            _ => &self.hash,
        }
    }

    /// Name of the digest algorithm of this package version.
    pub fn digest_algorithm(&self) -> Option<&'static str> {
        match self.pkg_version {
            PKG_TAR_SHA256 => Some("SHA-256"),
            PKG_GZIP_MD5 => Some("MD5"),
            _ => None,
        }
    }

    /// Compute the digest of `payload` for this header's package version.
    pub fn compute_digest(&self, payload: &[u8]) -> Option<Vec<u8>> {
        match self.pkg_version {
            PKG_TAR_SHA256 => Some(sha2::Sha256::digest(payload).to_vec()),
            PKG_GZIP_MD5 => Some(md5::Md5::digest(payload).to_vec()),
            _ => None,
        }
    }

    /// Store the digest of `payload` in `hash` (upper half zero for MD5).
    pub fn seal(&mut self, payload: &[u8]) {
        self.hash = [0; 32];
        if let Some(d) = self.compute_digest(payload) {
            self.hash[..d.len()].copy_from_slice(&d);
        }
        self.data_size = payload.len() as u64;
    }

    /// Whether the payload hashes to the digest this header records. A package version
    /// without a digest algorithm is a mismatch against an empty digest.
    pub fn check_digest(&self, payload: &[u8]) -> DigestStatus {
        let actual = self.compute_digest(payload).unwrap_or_default();
        if self.digest() == actual.as_slice() {
            DigestStatus::Match
        } else {
            DigestStatus::Mismatch {
                algorithm: self.digest_algorithm().unwrap_or("digest"),
                expected: hex(self.digest()),
                actual: hex(&actual),
            }
        }
    }

    /// Conditions under which the Neuron runtime would refuse this header even though the
    /// container is readable: a major version above 2. (Feature bits the runtime refuses are
    /// refused by the reader: [`super::NeffError::UnsupportedFeatures`].)
    pub fn runtime_compat_issues(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.neff_version_major > 2 {
            out.push(format!(
                "neff_version_major {} > 2 (runtime accepts 0..=2)",
                self.neff_version_major
            ));
        }
        out
    }

    /// The name of every set feature bit, unknown ones in hex
    /// ([`super::features::feature_names`]).
    pub fn feature_names(&self) -> Vec<String> {
        super::features::feature_names(self.feature_bits)
    }

    /// Whether bit 0x400 (`neff_feature_vnc`) is set.
    pub fn vnc_feature(&self) -> bool {
        self.feature_bits & super::features::FEATURE_VNC != 0
    }

    /// The logical-core size: `lnc_size`, with 0 read as 1 (NEFFs written before the field
    /// carry 0; the runtime's DWARF names the field `vnc_size`).
    pub fn lnc(&self) -> u32 {
        self.lnc_size.max(1)
    }
}

/// The outcome of the payload digest check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DigestStatus {
    /// The payload hashes to the header's digest.
    Match,
    /// It does not (a read with `ReadOptions::verify_hash` refuses the NEFF instead).
    Mismatch {
        /// `MD5` or `SHA-256`.
        algorithm: &'static str,
        /// Digest recorded in the header (hex).
        expected: String,
        /// Digest of the payload (hex).
        actual: String,
    },
    /// Not computed: `ReadOptions::verify_hash` is off (the runtime's default,
    /// `NEURON_RT_VALIDATE_HASH=false`), or a bare archive has no header to hold one.
    NotChecked,
}

impl DigestStatus {
    /// `match`, `mismatch` or `not checked`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DigestStatus::Match => "match",
            DigestStatus::Mismatch { .. } => "mismatch",
            DigestStatus::NotChecked => "not checked",
        }
    }
}

/// A deterministic name-based UUID (RFC 4122 version 3 layout) from an MD5 digest: the same
/// payload always gets the same UUID. `project-defined`: the compiler draws a random v4 UUID.
pub fn uuid_from_md5(digest: &[u8; 16]) -> [u8; 16] {
    let mut u = *digest;
    u[6] = (u[6] & 0x0F) | 0x30;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_match_the_runtime_layout() {
        let mut h = Header {
            pkg_version: 0x0102,
            header_size: 0x0400,
            data_size: 0xAABB,
            neff_version_major: 2,
            neff_version_minor: 7,
            ..Header::default()
        };
        h.set_build_version("2.24.5133").unwrap();
        h.num_tpb = 0x1122_3344;
        h.hash[0] = 0xEE;
        h.hash[31] = 0xEF;
        h.uuid[0] = 0x55;
        h.set_name("kernel").unwrap();
        h.requested_tpb_count = 0x0BAD_F00D;
        h.tpb_per_node[0] = 9;
        h.feature_bits = 0x0400;
        h.lnc_size = 2;
        let b = h.to_bytes();
        assert_eq!(b[0..2], [0x02, 0x01]);
        assert_eq!(b[8..10], [0x00, 0x04]);
        assert_eq!(b[16..18], [0xBB, 0xAA]);
        assert_eq!(b[24], 2);
        assert_eq!(b[32], 7);
        assert_eq!(&b[40..49], b"2.24.5133");
        assert_eq!(b[168..172], [0x44, 0x33, 0x22, 0x11]);
        assert_eq!((b[172], b[203]), (0xEE, 0xEF));
        assert_eq!(b[204], 0x55);
        assert_eq!(&b[220..226], b"kernel");
        assert_eq!(b[476..480], [0x0D, 0xF0, 0xAD, 0x0B]);
        assert_eq!(b[480], 9);
        assert_eq!(b[544..546], [0x00, 0x04]);
        assert_eq!(b[552], 2);
        assert!(b[556..].iter().all(|&x| x == 0));
        assert_eq!(Header::parse(&b), h);
        assert_eq!(h.name_str(), "kernel");
        assert_eq!(h.build_version_str(), "2.24.5133");
    }

    #[test]
    fn reserved_bytes_round_trip() {
        let mut b = [0u8; HEADER_LEN];
        b[HEADER_LEN - 1] = 0x7F;
        b[offset::RESERVED] = 1;
        assert_eq!(Header::parse(&b).to_bytes(), b);
    }

    #[test]
    fn name_limits() {
        let mut h = Header::default();
        assert!(h.set_name(&"x".repeat(255)).is_ok());
        assert_eq!(
            h.set_name(&"x".repeat(256)),
            Err(HeaderTextError::TooLong {
                field: "name",
                len: 256,
                max: 255
            })
        );
        assert_eq!(
            h.set_name("a\0b"),
            Err(HeaderTextError::Nul { field: "name" })
        );
        assert!(h.set_build_version(&"y".repeat(128)).is_err());
    }

    #[test]
    fn digests_follow_pkg_version() {
        let mut h = Header::default();
        h.seal(b"abc");
        assert_eq!(hex(h.digest()), "900150983cd24fb0d6963f7d28e17f72");
        assert!(h.hash[16..].iter().all(|&b| b == 0));
        h.pkg_version = PKG_TAR_SHA256;
        h.seal(b"abc");
        assert_eq!(
            hex(h.digest()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        h.pkg_version = 9;
        assert!(h.compute_digest(b"abc").is_none());
        assert!(h.digest_algorithm().is_none());
    }

    #[test]
    fn runtime_compat() {
        let mut h = Header::default();
        assert!(h.runtime_compat_issues().is_empty());
        h.neff_version_major = 3;
        assert_eq!(h.runtime_compat_issues().len(), 1);
    }

    #[test]
    fn digest_status() {
        let mut h = Header::default();
        h.seal(b"abc");
        assert_eq!(h.check_digest(b"abc"), DigestStatus::Match);
        let DigestStatus::Mismatch {
            algorithm,
            expected,
            actual,
        } = h.check_digest(b"abd")
        else {
            panic!("a changed payload matched")
        };
        assert_eq!(algorithm, "MD5");
        assert_eq!(expected, "900150983cd24fb0d6963f7d28e17f72");
        assert_ne!(actual, expected);
        assert_eq!(DigestStatus::NotChecked.as_str(), "not checked");
    }

    #[test]
    fn lnc_zero_reads_as_one() {
        let mut h = Header::default();
        assert_eq!(h.lnc(), 1);
        h.lnc_size = 1;
        assert_eq!(h.lnc(), 1);
        h.lnc_size = 2;
        assert_eq!(h.lnc(), 2);
        assert!(!h.vnc_feature());
        h.feature_bits = 0x20_9c00;
        assert!(h.vnc_feature());
    }

    #[test]
    fn uuid_layout() {
        let u = uuid_from_md5(&[0xFF; 16]);
        let h = Header {
            uuid: u,
            ..Header::default()
        };
        let s = h.uuid_str();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "3");
        assert_eq!(u[8] & 0xC0, 0x80);
    }
}
