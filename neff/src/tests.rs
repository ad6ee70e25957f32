//! Container tests: a fixture NEFF read back field by field, and hostile archives.

use super::*;
use proptest::prelude::*;
use serde_json::json;
use std::io::Write;
use tpbsim_isa::bundle::{Bundle, BUNDLE_SIZE};
use tpbsim_isa::NumFormat;

/// Bundles whose bytes encode their engine and index, so streams cannot be confused.
fn bundles(engine: Engine, n: usize) -> Vec<u8> {
    (0..n * BUNDLE_SIZE)
        .map(|i| (engine.wire_id() as usize * 31 + i / BUNDLE_SIZE * 7 + i % 13) as u8)
        .collect()
}

fn fixture_def() -> serde_json::Value {
    json!({
        "definition": {"pe": {"_instr": "PE.bin", "_dbg": "pe.dbg"}},
        "var": [
            {"var_id": 0, "name": "in0", "type": "input", "size": 64, "dtype": "bfloat16", "shape": [4, 8]},
            {"var_id": 1, "name": "out0", "type": "output", "size": 128, "dtype": "float32", "shape": [4, 8]},
            {"var_id": 2, "name": "w", "type": "file", "dtype": "int8", "shape": [2, 8], "size": 16, "file_name": "w.npy"},
            {"var_id": 3, "name": "scratch", "type": "tmp-buf", "size": 4096, "pointer": 12}
        ],
        "dma_queue": [
            {"name": "in", "id": 0, "owner": "in", "semaphore": 1},
            {"name": "data", "id": 1, "owner": "data", "semaphore_set": [2, 3]}
        ],
        "replica_groups": [[0]]
    })
}

fn fixture_pe_sidecar() -> serde_json::Value {
    json!({"dma": [{"queue": "in", "id": 0, "desc": [
        {"id": 0, "from": "in0", "to": "scratch", "from_sizes": [4, 8], "to_sizes": [32],
         "to_dtype": "bfloat16", "sem": 1},
        {"id": 1, "op": "cast", "from": 0, "to": "out0", "from_sizes": [32], "to_sizes": [4, 8],
         "to_offset": 0, "sem": 1, "sem_op": "add", "sem_value": 2}
    ]}]})
}

fn fixture_act_sidecar() -> serde_json::Value {
    json!({"dma": [{"instance_name": "data", "desc": [
        {"from_arr": ["w", "w"], "op": "add", "to": "scratch", "from_sizes": [16], "to_sizes": [16],
         "from_dtype": "int8", "to_dtype": "int8", "event": 5, "note": "kept"}
    ]}]})
}

/// A NEFF with neff.json, one subgraph, two streams (one under its file name, one under its
/// tar token), their sidecars (file name and token) and an `.npy` constant.
fn fixture() -> Neff {
    let mut n = Neff::new("fixture-kernel").unwrap();
    n.header.requested_tpb_count = 1;
    n.header.num_tpb = 1;
    n.header.lnc_size = 1;
    n.header.feature_bits = 0x400;
    n.header.neff_version_minor = 3;
    n.header.tpb_per_node[0] = 1;
    let m = &mut n.members;
    m.insert(
        "neff.json".into(),
        serde_json::to_vec(&json!({"revision": "0.5", "target_arch": "cayman", "graphs": {}}))
            .unwrap(),
    );
    m.insert(
        "sg00/def.json".into(),
        serde_json::to_vec_pretty(&fixture_def()).unwrap(),
    );
    m.insert("sg00/PE.bin".into(), bundles(Engine::Pe, 2));
    m.insert("sg00/act_instr".into(), bundles(Engine::Act, 3));
    m.insert(
        "sg00/PE.json".into(),
        serde_json::to_vec(&fixture_pe_sidecar()).unwrap(),
    );
    m.insert(
        "sg00/act".into(),
        serde_json::to_vec(&fixture_act_sidecar()).unwrap(),
    );
    let w: Vec<u8> = (0..16u8).map(|i| i.wrapping_mul(17)).collect();
    m.insert(
        "sg00/w.npy".into(),
        npy::encode_npy(NumFormat::Int8, &[2, 8], &w).unwrap(),
    );
    n
}

#[test]
fn fixture_round_trips_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.neff");
    let original = fixture();
    original.write_to(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    // Header fields as written.
    let h = Header::parse(bytes[..HEADER_LEN].try_into().unwrap());
    assert_eq!(h.pkg_version, PKG_GZIP_MD5);
    assert_eq!(h.header_size, 1024);
    assert_eq!(h.data_size, (bytes.len() - HEADER_LEN) as u64);
    assert_eq!(
        &bytes[HEADER_LEN..HEADER_LEN + 2],
        &[0x1F, 0x8B],
        "gzip payload at 0x400"
    );
    assert_eq!(
        h.digest(),
        <md5::Md5 as md5::Digest>::digest(&bytes[HEADER_LEN..]).as_slice()
    );
    assert!(h.hash[16..].iter().all(|&b| b == 0));
    assert_eq!(
        h.build_version_str(),
        concat!("tpbsim ", env!("CARGO_PKG_VERSION"))
    );
    assert_ne!(h.uuid, [0; 16]);

    let back = Neff::read(&path, &ReadOptions::default()).unwrap();
    assert_eq!(back.layout, Layout::Headered);
    assert_eq!(back.members, original.members);
    assert_eq!(back.header.name_str(), "fixture-kernel");
    assert_eq!(
        (
            back.header.requested_tpb_count,
            back.header.num_tpb,
            back.header.lnc_size,
            back.header.feature_bits
        ),
        (1, 1, 1, 0x400)
    );
    assert_eq!(
        (
            back.header.neff_version_major,
            back.header.neff_version_minor
        ),
        (2, 3)
    );
    assert_eq!(back.header.tpb_per_node[0], 1);
    assert_eq!(back.header.uuid, h.uuid);
    assert_eq!(
        back.neff_json().unwrap().unwrap().target_arch.as_deref(),
        Some("cayman")
    );

    assert_eq!(back.subgraph_dirs(), vec!["sg00".to_string()]);
    let sg = back.subgraph("sg00").unwrap();
    assert_eq!(sg.def_member, "sg00/def.json");
    // Variables.
    let v = &sg.def.var;
    assert_eq!(v.len(), 4);
    assert_eq!(
        (v[0].var_id, v[0].name.as_str(), &v[0].kind),
        (0, "in0", &VarKind::Input)
    );
    assert_eq!(
        (v[0].size, v[0].dtype, v[0].shape.clone()),
        (Some(64), Some(NumFormat::Bfloat16), Some(vec![4, 8]))
    );
    assert_eq!(
        (v[1].kind.clone(), v[1].dtype),
        (VarKind::Output, Some(NumFormat::Float32))
    );
    assert_eq!(
        (v[2].kind.clone(), v[2].file_name.as_deref()),
        (VarKind::File, Some("w.npy"))
    );
    assert_eq!(
        (v[3].kind.clone(), v[3].byte_size()),
        (VarKind::TmpBuf, Some(4096))
    );
    assert_eq!(v[3].extra.get("pointer"), Some(&json!(12)));
    assert!(sg.def.extra.contains_key("replica_groups"));
    // Queues and semaphores.
    assert_eq!(sg.def.dma_queue.len(), 2);
    assert_eq!(sg.def.queue("in").unwrap().semaphores(), vec![1]);
    assert_eq!(sg.def.queue("data").unwrap().semaphores(), vec![2, 3]);
    assert_eq!(sg.def.queue("data").unwrap().owner.as_deref(), Some("data"));
    // Streams: PE through def.json's `_instr`, ACT through its tar token.
    assert_eq!(sg.streams.len(), 2);
    assert_eq!(sg.streams[&Engine::Pe].member, "sg00/PE.bin");
    assert_eq!(sg.streams[&Engine::Act].member, "sg00/act_instr");
    let pe = sg.stream(Engine::Pe).unwrap();
    assert_eq!((pe.engine(), pe.len()), (Engine::Pe, 2));
    assert_eq!(pe.as_bytes(), &bundles(Engine::Pe, 2)[..]);
    let act = sg.stream(Engine::Act).unwrap();
    assert_eq!((act.engine(), act.len()), (Engine::Act, 3));
    assert_eq!(
        act.get(2).unwrap(),
        &Bundle::from_slice(&bundles(Engine::Act, 3)[128..192]).unwrap()
    );
    assert!(sg.stream(Engine::Pool).is_none());
    // Sidecars.
    assert_eq!(sg.sidecars[&Engine::Pe].member, "sg00/PE.json");
    assert_eq!(sg.sidecars[&Engine::Act].member, "sg00/act");
    let pe_dma = sg.sidecar(Engine::Pe).unwrap();
    assert_eq!(pe_dma.entry_count(), 2);
    assert_eq!(pe_dma.dma[0].queue_name(), Some("in"));
    let e0 = &pe_dma.dma[0].desc[0];
    assert_eq!(
        (e0.id, e0.op(), e0.from.clone(), e0.to.clone()),
        (
            Some(0),
            DmaOp::Copy,
            Some(VarRef::Name("in0".into())),
            VarRef::Name("scratch".into())
        )
    );
    assert_eq!(
        (
            e0.from_sizes.clone(),
            e0.to_sizes.clone(),
            e0.to_dtype,
            e0.sem
        ),
        (vec![4, 8], vec![32], Some(NumFormat::Bfloat16), Some(1))
    );
    let e1 = &pe_dma.dma[0].desc[1];
    assert_eq!(
        (e1.op(), e1.from.clone(), e1.sem_op.clone(), e1.sem_value),
        (DmaOp::Cast, Some(VarRef::Id(0)), Some(SemOp::Add), Some(2))
    );
    let act_dma = sg.sidecar(Engine::Act).unwrap();
    assert_eq!(act_dma.dma[0].queue_name(), Some("data"));
    let a0 = &act_dma.dma[0].desc[0];
    assert_eq!(
        (a0.op(), a0.sources().len(), a0.event),
        (DmaOp::Add, 2, Some(5))
    );
    assert_eq!(a0.extra.get("note"), Some(&json!("kept")));
    // The constant.
    let w = back.npy("sg00/w.npy").unwrap();
    assert_eq!(
        (w.shape.clone(), w.resolve(NumFormat::Int8).unwrap()),
        (vec![2, 8], NumFormat::Int8)
    );
    assert_eq!(w.data[1], 17);
    // Re-writing the read NEFF gives the same bytes (deterministic writer).
    assert_eq!(back.to_bytes().unwrap(), bytes);
}

#[test]
fn pkg1_and_bare_archives() {
    let mut n = fixture();
    n.header.pkg_version = PKG_TAR_SHA256;
    let bytes = n.to_bytes().unwrap();
    assert!(archive::is_tar(&bytes[HEADER_LEN..]));
    let back = Neff::from_bytes(&bytes, &ReadOptions::default()).unwrap();
    assert_eq!(back.members, n.members);
    assert_eq!(back.header.digest().len(), 32);
    // A bare gzip tar and a bare plain tar.
    let gz = archive::write_gzip_tar(&n.members).unwrap();
    let back = Neff::from_bytes(&gz, &ReadOptions::default()).unwrap();
    assert_eq!(
        (back.layout, back.members.len()),
        (Layout::BareGzip, n.members.len())
    );
    let tar = archive::write_plain_tar(&n.members).unwrap();
    let back = Neff::from_bytes(&tar, &ReadOptions::default()).unwrap();
    assert_eq!(back.layout, Layout::BareTar);
    back.subgraph("sg00").unwrap();
}

#[test]
fn name_holding_ustar_is_not_a_bare_tar() {
    let mut n = fixture();
    // Byte 257 of the file is byte 37 of the name field (0xDC = 220).
    n.header
        .set_name(&format!("{}ustar00", "x".repeat(37)))
        .unwrap();
    let bytes = n.to_bytes().unwrap();
    assert_eq!(&bytes[257..262], b"ustar");
    let back = read(&bytes).unwrap();
    assert_eq!(
        (back.layout, back.header.name_str()),
        (Layout::Headered, n.header.name_str())
    );
}

#[test]
fn unpack_refuses_file_directory_clashes() {
    let mut n = Neff::new("k").unwrap();
    n.members.insert("a".into(), b"file".to_vec());
    n.members.insert("a/b".into(), b"nested".to_vec());
    let dest = tempfile::tempdir().unwrap();
    let e = n.unpack(dest.path(), false).unwrap_err();
    assert!(e.to_string().contains("both a file and a directory"), "{e}");
    assert_eq!(
        std::fs::read_dir(dest.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn pack_from_directory_and_unpack() {
    let src = tempfile::tempdir().unwrap();
    let n = fixture();
    for (name, data) in &n.members {
        let p = src.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
    let packed = Neff::from_dir(src.path(), "fixture-kernel", &Limits::default()).unwrap();
    assert_eq!(packed.members, n.members);
    let out = tempfile::tempdir().unwrap();
    let neff_path = out.path().join("x.neff");
    packed.write_to(&neff_path).unwrap();
    let read = Neff::read(&neff_path, &ReadOptions::default()).unwrap();
    let dest = out.path().join("unpacked");
    read.unpack(&dest, false).unwrap();
    for (name, data) in &n.members {
        assert_eq!(&std::fs::read(dest.join(name)).unwrap(), data, "{name}");
    }
    // A second unpack refuses to overwrite, then succeeds with overwrite.
    let e = read.unpack(&dest, false).unwrap_err();
    assert!(e.to_string().contains("--force"), "{e}");
    read.unpack(&dest, true).unwrap();
}

/// The committed source directory (`testdata/neff/kernel`, numpy-written constant) packs into
/// a NEFF whose subgraph checks pass.
#[test]
fn testdata_kernel_packs_and_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/neff/kernel");
    let n = Neff::from_dir(&dir, "kernel", &Limits::default()).unwrap();
    let names: Vec<&str> = n.members.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "neff.json",
            "sg00/PE.bin",
            "sg00/PE.json",
            "sg00/act",
            "sg00/act_instr",
            "sg00/def.json",
            "sg00/w.npy"
        ]
    );
    let back = Neff::from_bytes(&n.to_bytes().unwrap(), &ReadOptions::default()).unwrap();
    let sg = back.subgraph("sg00").unwrap();
    assert_eq!(sg.stream(Engine::Pe).unwrap().len(), 2);
    assert_eq!(sg.stream(Engine::Act).unwrap().len(), 3);
    assert_eq!(
        sg.stream(Engine::Pe).unwrap().as_bytes(),
        &bundles(Engine::Pe, 2)[..]
    );
    assert_eq!(
        sg.sidecar(Engine::Act).unwrap().dma[0].desc[0].to_offset,
        64
    );
    let w = back.npy("sg00/w.npy").unwrap();
    assert_eq!(w.descr, "|i1");
    assert_eq!(
        w.data[..3],
        [156, 173, 190],
        "(17 i - 100) as int8, from numpy"
    );
}

#[cfg(unix)]
#[test]
fn pack_refuses_symlinks_and_unpack_never_follows_them() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("a"), b"x").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.path().join("link")).unwrap();
    let e = Neff::from_dir(src.path(), "k", &Limits::default()).unwrap_err();
    assert!(matches!(e, NeffError::Pack { .. }), "{e}");

    let outside = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dest.path().join("sg00")).unwrap();
    let e = fixture().unpack(dest.path(), true).unwrap_err();
    assert!(matches!(e, NeffError::UnsafePath { .. }), "{e}");
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

// ---------- hostile archives ----------

/// One raw tar entry: name bytes written verbatim into the header (no sanitising).
struct Raw<'a> {
    name: &'a [u8],
    kind: tar::EntryType,
    data: &'a [u8],
    link: &'a [u8],
}

fn raw(name: &[u8], data: &'static [u8]) -> Raw<'static> {
    Raw {
        name: Box::leak(name.to_vec().into_boxed_slice()),
        kind: tar::EntryType::Regular,
        data,
        link: b"",
    }
}

fn raw_tar(entries: &[Raw<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(e.kind);
        h.set_size(e.data.len() as u64);
        h.set_mode(0o644);
        h.as_mut_bytes()[..e.name.len()].copy_from_slice(e.name);
        h.as_mut_bytes()[157..157 + e.link.len()].copy_from_slice(e.link);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(e.data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Put a payload behind a correct pkg-2 header.
fn wrap(payload: &[u8]) -> Vec<u8> {
    let mut h = Header::default();
    h.seal(payload);
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn read(bytes: &[u8]) -> Result<Neff, NeffError> {
    Neff::from_bytes(bytes, &ReadOptions::default())
}

#[test]
fn traversal_and_absolute_paths() {
    for name in [&b"../evil"[..], b"sg00/../../evil", b"/etc/evil", b"./../x"] {
        let e = read(&wrap(&gzip(&raw_tar(&[raw(name, b"x")])))).unwrap_err();
        assert!(
            matches!(e, NeffError::UnsafePath { .. }),
            "{}: {e}",
            String::from_utf8_lossy(name)
        );
    }
}

#[test]
fn links_and_devices() {
    let cases = [
        (tar::EntryType::Symlink, "symbolic link"),
        (tar::EntryType::Link, "hard link"),
        (tar::EntryType::Char, "character device"),
        (tar::EntryType::Block, "block device"),
        (tar::EntryType::Fifo, "FIFO"),
    ];
    for (kind, label) in cases {
        let t = raw_tar(&[Raw {
            name: b"sg00/PE.bin",
            kind,
            data: b"",
            link: b"/etc/passwd",
        }]);
        match read(&wrap(&gzip(&t))).unwrap_err() {
            NeffError::UnsupportedEntry { member, kind } => {
                assert_eq!((member.as_str(), kind), ("sg00/PE.bin", label))
            }
            other => panic!("{label}: {other}"),
        }
    }
}

#[test]
fn duplicates_after_normalisation() {
    let t = raw_tar(&[raw(b"sg00/def.json", b"{}"), raw(b"./sg00/def.json", b"{}")]);
    let e = read(&wrap(&gzip(&t))).unwrap_err();
    assert!(
        matches!(e, NeffError::DuplicateMember { ref member } if member == "sg00/def.json"),
        "{e}"
    );
}

#[test]
fn decompression_bombs() {
    let zeros: &'static [u8] = Box::leak(vec![0u8; 2 << 20].into_boxed_slice());
    let bomb = wrap(&gzip(&raw_tar(&[raw(b"big", zeros)])));
    assert!(bomb.len() < 64 << 10, "compresses well: {}", bomb.len());
    let small = ReadOptions {
        verify_hash: true,
        limits: Limits {
            max_total_bytes: 4 << 20,
            max_member_bytes: 1 << 20,
            max_members: 10,
        },
    };
    let e = Neff::from_bytes(&bomb, &small).unwrap_err();
    assert!(
        matches!(e, NeffError::MemberTooLarge { size, .. } if size == 2 << 20),
        "{e}"
    );

    let chunk: &'static [u8] = &zeros[..700 << 10];
    let many = wrap(&gzip(&raw_tar(&[
        raw(b"a", chunk),
        raw(b"b", chunk),
        raw(b"c", chunk),
    ])));
    let tight = ReadOptions {
        limits: Limits {
            max_total_bytes: 1 << 20,
            ..small.limits
        },
        ..small
    };
    assert!(matches!(
        Neff::from_bytes(&many, &tight).unwrap_err(),
        NeffError::ArchiveTooLarge { .. }
    ));

    let entries: Vec<Raw> = (0..12)
        .map(|i| raw(format!("m{i}").as_bytes(), b"x"))
        .collect();
    let count = wrap(&gzip(&raw_tar(&entries)));
    assert!(matches!(
        Neff::from_bytes(&count, &small).unwrap_err(),
        NeffError::TooManyMembers { limit: 10 }
    ));

    // A GNU long-name record far bigger than the limits allow trips the stream budget.
    let long: &'static [u8] = zeros;
    let t = raw_tar(&[
        Raw {
            name: b"././@LongLink",
            kind: tar::EntryType::GNULongName,
            data: long,
            link: b"",
        },
        raw(b"x", b"y"),
    ]);
    let tiny = ReadOptions {
        limits: Limits {
            max_total_bytes: 64 << 10,
            max_member_bytes: 64 << 10,
            max_members: 4,
        },
        ..small
    };
    let e = Neff::from_bytes(&wrap(&gzip(&t)), &tiny).unwrap_err();
    assert!(matches!(e, NeffError::ArchiveTooLarge { .. }), "{e}");
}

const VERIFY: ReadOptions = ReadOptions {
    verify_hash: true,
    limits: Limits {
        max_total_bytes: 1 << 30,
        max_member_bytes: 512 << 20,
        max_members: 100_000,
    },
};

#[test]
fn the_hash_is_checked_only_on_request() {
    assert!(!ReadOptions::default().verify_hash);
    assert_eq!(VERIFY.limits, Limits::default());
    let good = fixture().to_bytes().unwrap();
    assert_eq!(read(&good).unwrap().digest, DigestStatus::NotChecked);
    assert_eq!(
        Neff::from_bytes(&good, &VERIFY).unwrap().digest,
        DigestStatus::Match
    );
    let mut bytes = good.clone();
    bytes[header::offset::HASH] ^= 0xFF;
    match Neff::from_bytes(&bytes, &VERIFY).unwrap_err() {
        NeffError::HashMismatch { algorithm, .. } => assert_eq!(algorithm, "MD5"),
        other => panic!("{other}"),
    }
    // Without the request the runtime's default holds: read, digest not checked.
    let back = read(&bytes).unwrap();
    assert_eq!(back.members, fixture().members);
    assert_eq!(back.digest, DigestStatus::NotChecked);
    let mut n = fixture();
    n.header.pkg_version = PKG_TAR_SHA256;
    let mut bytes = n.to_bytes().unwrap();
    bytes[header::offset::HASH + 31] ^= 1;
    assert!(matches!(
        Neff::from_bytes(&bytes, &VERIFY).unwrap_err(),
        NeffError::HashMismatch {
            algorithm: "SHA-256",
            ..
        }
    ));
    assert!(read(&bytes).is_ok());
    // A bare archive has no digest.
    let gz = archive::write_gzip_tar(&fixture().members).unwrap();
    assert_eq!(
        Neff::from_bytes(&gz, &VERIFY).unwrap().digest,
        DigestStatus::NotChecked
    );
}

/// A pkg-2 header sealed over `payload`, then `data_size` set to `data_size`, followed by
/// `payload`.
fn headered(payload: &[u8], data_size: u64) -> Vec<u8> {
    let mut h = Header::default();
    h.seal(&payload[..(data_size as usize).min(payload.len())]);
    h.data_size = data_size;
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

#[test]
fn zero_padding_after_the_gzip_member_is_read_a_non_zero_byte_is_not() {
    let gz = archive::write_gzip_tar(&fixture().members).unwrap();
    let end = (HEADER_LEN + gz.len()) as u64;
    let mut padded = gz.clone();
    padded.resize(gz.len() + 7839, 0);
    let n = Neff::from_bytes(&headered(&padded, padded.len() as u64), &VERIFY).unwrap();
    assert_eq!(n.members, fixture().members);
    assert_eq!(
        n.digest,
        DigestStatus::Match,
        "the digest covers the padding"
    );
    // One non-zero byte: the first after the member, the last before data_size.
    for at in [0, 7838] {
        let mut bad = padded.clone();
        bad[gz.len() + at] = 0x5A;
        match read(&headered(&bad, bad.len() as u64)).unwrap_err() {
            NeffError::TrailingData {
                offset,
                value,
                archive_end,
            } => assert_eq!((offset, value, archive_end), (end + at as u64, 0x5A, end)),
            other => panic!("{other}"),
        }
    }
    // A second gzip member is not zero padding.
    let mut two = gz.clone();
    two.extend_from_slice(&gz);
    let e = read(&headered(&two, two.len() as u64)).unwrap_err();
    assert!(
        matches!(e, NeffError::TrailingData { offset, value: 0x1F, .. } if offset == end),
        "{e}"
    );
    // A bare gzip archive: the same rule, offsets from the start of the file.
    let mut bare = padded.clone();
    assert_eq!(read(&bare).unwrap().layout, Layout::BareGzip);
    *bare.last_mut().unwrap() = 1;
    assert!(matches!(
        read(&bare).unwrap_err(),
        NeffError::TrailingData { offset, .. } if offset == bare.len() as u64 - 1
    ));
}

#[test]
fn data_size_edges() {
    let gz = archive::write_gzip_tar(&fixture().members).unwrap();
    let mut padded = gz.clone();
    padded.resize(gz.len() + 100, 0);
    let len = padded.len() as u64;
    // Up to the end of the file, or up to the end of the gzip member with zeros after it.
    for ds in [len, gz.len() as u64] {
        let n = Neff::from_bytes(&headered(&padded, ds), &VERIFY).unwrap();
        assert_eq!(
            (n.header.data_size, n.members.len()),
            (ds, fixture().members.len())
        );
    }
    // One byte more than the file holds, and zero.
    for ds in [len + 1, 0] {
        assert!(
            matches!(
                read(&headered(&padded, ds)).unwrap_err(),
                NeffError::DataSize { data_size, available } if data_size == ds && available == len
            ),
            "data_size {ds}"
        );
    }
    // One byte short of the gzip member cuts its trailer.
    let e = read(&headered(&padded, gz.len() as u64 - 1)).unwrap_err();
    assert!(matches!(e, NeffError::TruncatedArchive { .. }), "{e}");
    // A non-zero byte past data_size is refused like one before it.
    let mut bad = padded.clone();
    *bad.last_mut().unwrap() = 2;
    assert!(matches!(
        read(&headered(&bad, gz.len() as u64)).unwrap_err(),
        NeffError::TrailingData { offset, value: 2, .. } if offset == HEADER_LEN as u64 + len - 1
    ));
}

#[test]
fn feature_bits_the_runtime_refuses() {
    let good = fixture().to_bytes().unwrap();
    let with_bits = |major: u64, bits: u64| {
        let mut b = good.clone();
        let mut h = Header::parse(b[..HEADER_LEN].try_into().unwrap());
        h.neff_version_major = major;
        h.feature_bits = bits;
        b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
        read(&b)
    };
    // Bit 26 is the runtime's last known bit; bit 27 the first refused one.
    assert!(with_bits(2, 0x20_9c00 | 1 << 26).is_ok());
    for bit in [27, 40, 62] {
        match with_bits(2, 0x400 | 1 << bit).unwrap_err() {
            NeffError::UnsupportedFeatures { bits, refused } => {
                assert_eq!((bits, refused), (0x400 | 1 << bit, 1 << bit))
            }
            other => panic!("bit {bit}: {other}"),
        }
    }
    // Bit 63 is outside the mask, and only major version 2 is checked.
    assert!(with_bits(2, 1 << 63).is_ok());
    assert!(with_bits(1, 1 << 27).is_ok());
    let e = with_bits(2, 1 << 27).unwrap_err().to_string();
    assert!(
        e.contains("0x7ffffffff8000000") && e.contains("0x8000000"),
        "{e}"
    );
}

#[test]
fn engine_jsons_name_their_tables() {
    // An ACT engine JSON naming its set manifest and a DVE one naming its tables, in the
    // by-name layout: the named members are checked, described and kept by the writer.
    let act_info = json!({"pwp_file_keys": ["bkt_bin", "ctrl_bin"], "act_func_sets": [
        {"name": "unused_set", "bkt_bin": "unused_bkt.bin", "ctrl_bin": "unused_ctrl.bin"},
        {"name": "exp_and_others", "bkt_bin": "exp_bkt.bin", "ctrl_bin": "exp_ctrl.bin", "act": {"exp": 400}}
    ]});
    let mut act = fixture_act_sidecar();
    act["act_info"] = json!("act_info.json");
    act["activation_function_sets"] = json!(["exp_and_others"]);
    act["act_semaphore"] = json!(12);
    let dve = json!({"dma": [], "dve_tables": [{"opcode_table": "default_opcode_table.bin",
        "datapath_table": "default_datapath_table.bin"}]});
    let build = |drop: Option<&str>, set: &str| {
        let mut n = fixture();
        let mut act = act.clone();
        act["activation_function_sets"] = json!([set]);
        let m = &mut n.members;
        m.insert("sg00/act".into(), serde_json::to_vec(&act).unwrap());
        m.insert("sg00/DVE.json".into(), serde_json::to_vec(&dve).unwrap());
        m.insert("sg00/DVE.bin".into(), bundles(Engine::Dve, 1));
        m.insert(
            "sg00/act_info.json".into(),
            serde_json::to_vec(&act_info).unwrap(),
        );
        for f in [
            "exp_bkt.bin",
            "exp_ctrl.bin",
            "default_opcode_table.bin",
            "default_datapath_table.bin",
        ] {
            m.insert(format!("sg00/{f}"), vec![7; 16]);
        }
        if let Some(d) = drop {
            m.remove(d);
        }
        n
    };
    let n = build(None, "exp_and_others");
    let sg = n.subgraph("sg00").unwrap();
    assert_eq!(
        sg.named.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "sg00/act_info.json",
            "sg00/default_datapath_table.bin",
            "sg00/default_opcode_table.bin",
            "sg00/exp_bkt.bin",
            "sg00/exp_ctrl.bin"
        ],
        "the unused set's files are not named"
    );
    assert!(sg.named["sg00/exp_ctrl.bin"].contains("act_func_sets[1].ctrl_bin"));
    // The typed keys are modelled: not listed (the fixture's `add` descriptor is).
    let keys = [
        "act_info",
        "act_semaphore",
        "activation_function_sets",
        "dve_tables",
    ];
    assert!(
        !sg.unmodelled
            .iter()
            .any(|u| keys.contains(&u.path.as_str())),
        "{:?}",
        sg.unmodelled
    );
    let r = to_runtime_layout(&n).unwrap();
    for f in ["exp_bkt.bin", "default_opcode_table.bin", "act_info.json"] {
        assert_eq!(
            r.neff.members[&format!("sg00/{f}")],
            n.members[&format!("sg00/{f}")]
        );
    }
    r.neff.subgraph("sg00").unwrap();
    // Each named member must exist while its engine runs a program.
    for gone in [
        "sg00/exp_ctrl.bin",
        "sg00/act_info.json",
        "sg00/default_datapath_table.bin",
    ] {
        match build(Some(gone), "exp_and_others")
            .subgraph("sg00")
            .unwrap_err()
        {
            NeffError::MissingMember { member, .. } => assert_eq!(member, gone),
            other => panic!("{gone}: {other}"),
        }
    }
    // A set the manifest does not describe.
    let e = build(None, "gelu").subgraph("sg00").unwrap_err();
    assert!(
        e.to_string().contains("activation_function_sets[0]") && e.to_string().contains("gelu"),
        "{e}"
    );
    // A non-default DVE table set changes results while DVE runs a program.
    let mut n = build(None, "exp_and_others");
    let custom = json!({"dma": [], "dve_tables": [{"opcode_table": "saturate_opcode_table.bin"}]});
    n.members
        .insert("sg00/DVE.json".into(), serde_json::to_vec(&custom).unwrap());
    n.members
        .insert("sg00/saturate_opcode_table.bin".into(), vec![1; 16]);
    let sg = n.subgraph("sg00").unwrap();
    let u: Vec<_> = sg
        .unmodelled
        .iter()
        .filter(|u| u.affects_results && u.member == "sg00/DVE.json")
        .collect();
    assert_eq!(u.len(), 1, "{u:?}");
    assert_eq!(
        (u[0].member.as_str(), u[0].path.as_str()),
        ("sg00/DVE.json", "dve_tables")
    );
    // Without a DVE program the same tables are listed as harmless.
    n.members.insert("sg00/DVE.bin".into(), Vec::new());
    let sg = n.subgraph("sg00").unwrap();
    let u: Vec<_> = sg
        .unmodelled
        .iter()
        .filter(|u| u.member == "sg00/DVE.json")
        .collect();
    assert_eq!(u.len(), 1, "{u:?}");
    assert!(!u[0].affects_results);
}

/// The fixture with `count` subgraphs (sg00's members copied to sg01, ...) and `lnc_size`.
fn with_subgraphs(count: usize, lnc_size: u32) -> Neff {
    let mut n = fixture();
    n.header.lnc_size = lnc_size;
    let sg00: Vec<(String, Vec<u8>)> = n
        .members
        .iter()
        .filter_map(|(m, d)| m.strip_prefix("sg00/").map(|r| (r.to_string(), d.clone())))
        .collect();
    for i in 1..count {
        for (rest, d) in &sg00 {
            n.members.insert(format!("sg{i:02}/{rest}"), d.clone());
        }
    }
    n
}

#[test]
fn subgraph_count_against_the_logical_core_size() {
    for lnc in [0u32, 1, 2] {
        for count in [1usize, 2, 3] {
            let n = with_subgraphs(count, lnc);
            let sgs = n.subgraphs().unwrap();
            assert_eq!(sgs.len(), count);
            let r = n.logical_core(&sgs);
            let size = lnc.max(1);
            if count == 1 || count as u32 == size {
                let core = r.unwrap();
                assert_eq!((core.size, core.subgraphs), (size, count));
                // The fixture sets header bit 0x400.
                assert!(core.vnc_feature);
            } else {
                match r.unwrap_err() {
                    NeffError::SubgraphCount {
                        subgraphs,
                        lnc_size,
                    } => assert_eq!((subgraphs, lnc_size), (count, size), "lnc {lnc}"),
                    other => panic!("lnc {lnc}, {count} subgraphs: {other}"),
                }
            }
        }
    }
    // The vnc feature from def.json neff_features alone.
    let mut n = with_subgraphs(2, 2);
    n.header.feature_bits = 0;
    let sgs = n.subgraphs().unwrap();
    assert!(!n.logical_core(&sgs).unwrap().vnc_feature);
    let mut def = fixture_def();
    def["neff_features"] = json!(["neff_feature_vnc"]);
    n.members
        .insert("sg01/def.json".into(), serde_json::to_vec(&def).unwrap());
    let sgs = n.subgraphs().unwrap();
    assert!(n.logical_core(&sgs).unwrap().vnc_feature);
}

#[test]
fn header_errors() {
    assert!(matches!(
        read(&[0u8; 100]).unwrap_err(),
        NeffError::TruncatedHeader { len: 100 }
    ));
    assert!(matches!(
        read(&[]).unwrap_err(),
        NeffError::TruncatedHeader { len: 0 }
    ));
    let good = fixture().to_bytes().unwrap();
    assert!(matches!(
        read(&good[..HEADER_LEN - 1]).unwrap_err(),
        NeffError::TruncatedHeader { .. }
    ));
    let mut b = good.clone();
    b[0] = 3;
    assert!(matches!(
        read(&b).unwrap_err(),
        NeffError::UnsupportedPackageVersion(3)
    ));
    let mut b = good.clone();
    b[header::offset::HEADER_SIZE..header::offset::HEADER_SIZE + 8]
        .copy_from_slice(&(good.len() as u64).to_le_bytes());
    assert!(matches!(
        read(&b).unwrap_err(),
        NeffError::HeaderSize { .. }
    ));
    // Bytes past data_size: zeros are read past, anything else is refused.
    let mut b = good.clone();
    b.push(0);
    assert!(read(&b).is_ok(), "trailing zero");
    *b.last_mut().unwrap() = 1;
    assert!(
        matches!(read(&b).unwrap_err(), NeffError::TrailingData { .. }),
        "trailing byte"
    );
    assert!(
        matches!(
            read(&good[..good.len() - 10]).unwrap_err(),
            NeffError::DataSize { .. }
        ),
        "cut file"
    );
}

#[test]
fn truncated_and_corrupt_archives() {
    let tar = archive::write_plain_tar(&fixture().members).unwrap();
    let gz = gzip(&tar);
    // Cut inside the deflate stream, header resealed so only the archive is at fault.
    let e = read(&wrap(&gz[..gz.len() / 2])).unwrap_err();
    assert!(matches!(e, NeffError::TruncatedArchive { .. }), "{e}");
    // Cut the gzip trailer only.
    let e = read(&wrap(&gz[..gz.len() - 4])).unwrap_err();
    assert!(matches!(e, NeffError::TruncatedArchive { .. }), "{e}");
    // A bare gzip tar cut short.
    let e = read(&gz[..gz.len() - 100]).unwrap_err();
    assert!(matches!(e, NeffError::TruncatedArchive { .. }), "{e}");
    // A plain tar whose member body is cut.
    let mut h = Header {
        pkg_version: PKG_TAR_SHA256,
        ..Header::default()
    };
    let cut = &tar[..700];
    h.seal(cut);
    let mut b = h.to_bytes().to_vec();
    b.extend_from_slice(cut);
    let e = read(&b).unwrap_err();
    assert!(matches!(e, NeffError::TruncatedArchive { .. }), "{e}");
    // A tar header checksum broken.
    let mut bad = tar.clone();
    bad[0] ^= 0x20;
    let e = read(&wrap(&gzip(&bad))).unwrap_err();
    assert!(matches!(e, NeffError::CorruptArchive { .. }), "{e}");
    // gzip CRC broken.
    let mut bad = gz.clone();
    let n = bad.len();
    bad[n - 8] ^= 0xFF;
    let e = read(&wrap(&bad)).unwrap_err();
    assert!(matches!(e, NeffError::CorruptArchive { .. }), "{e}");
    // Not an archive at all behind a valid header.
    let e = read(&wrap(b"definitely not a tar archive")).unwrap_err();
    assert!(
        matches!(
            e,
            NeffError::CorruptArchive { .. } | NeffError::TruncatedArchive { .. }
        ),
        "{e}"
    );
}

// ---------- subgraph cross-checks ----------

fn with(f: impl FnOnce(&mut BTreeMap<String, Vec<u8>>)) -> Neff {
    let mut n = fixture();
    f(&mut n.members);
    n
}

#[test]
fn subgraph_errors() {
    let n = with(|m| {
        m.remove("sg00/PE.bin");
    });
    let e = n.subgraph("sg00").unwrap_err();
    assert!(
        matches!(e, NeffError::MissingMember { ref member, .. } if member == "sg00/PE.bin"),
        "{e}"
    );
    assert!(e.to_string().contains("definition.pe._instr"), "{e}");

    // The tar token alone satisfies def.json's file name.
    let n = with(|m| {
        let pe = m.remove("sg00/PE.bin").unwrap();
        m.insert("sg00/pe_instr".into(), pe);
    });
    assert_eq!(
        n.subgraph("sg00").unwrap().streams[&Engine::Pe].member,
        "sg00/pe_instr"
    );

    let n = with(|m| {
        m.insert("sg00/pe_instr".into(), bundles(Engine::Pe, 1));
    });
    assert!(matches!(
        n.subgraph("sg00").unwrap_err(),
        NeffError::Invalid { .. }
    ));

    let n = with(|m| {
        m.insert("sg00/DVE.bin".into(), vec![0; 65]);
    });
    let e = n.subgraph("sg00").unwrap_err();
    assert!(
        matches!(
            e,
            NeffError::Stream(StreamError::NotBundleAligned { trailing: 1, .. })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("sg00/DVE.bin"), "{e}");

    let n = with(|m| {
        m.insert(
            "sg00/w.npy".into(),
            npy::encode_npy(NumFormat::Int8, &[16], &[0; 16]).unwrap(),
        );
    });
    let e = n.subgraph("sg00").unwrap_err();
    assert!(e.to_string().contains("var[2].shape"), "{e}");

    let n = with(|m| {
        m.insert(
            "sg00/w.npy".into(),
            npy::encode_npy(NumFormat::Uint8, &[2, 8], &[0; 16]).unwrap(),
        );
    });
    assert!(matches!(
        n.subgraph("sg00").unwrap_err(),
        NeffError::Npy { .. }
    ));

    let n = with(|m| {
        m.remove("sg00/w.npy");
    });
    assert!(matches!(
        n.subgraph("sg00").unwrap_err(),
        NeffError::MissingMember { .. }
    ));

    let n = with(|m| {
        m.insert("sg00/act".into(), br#"{"dma": [{"queue": "in", "desc": [{"from": "ghost", "to": "w", "from_sizes": [1], "to_sizes": [1]}]}]}"#.to_vec());
    });
    let e = n.subgraph("sg00").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("sg00/act: at dma[0].desc[0].from"),
        "{e}"
    );

    let n = with(|m| {
        m.insert("sg00/def.json".into(), b"{\"var\": 3}".to_vec());
    });
    let e = n.subgraph("sg00").unwrap_err();
    assert!(
        matches!(e, NeffError::Json { ref path, .. } if path == "var"),
        "{e}"
    );
}

// ---------- never panic ----------

proptest! {
    #![proptest_config(ProptestConfig { cases: proptest_cases(), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..3000), verify in any::<bool>()) {
        let opts = ReadOptions { verify_hash: verify, ..ReadOptions::default() };
        if let Ok(n) = Neff::from_bytes(&bytes, &opts) {
            for d in n.subgraph_dirs() {
                let _ = n.subgraph(&d);
            }
        }
        let _ = npy::read_npy(&bytes);
    }

    #[test]
    fn truncated_and_mutated_fixtures_never_panic(cut in 0usize..20_000, flips in proptest::collection::vec((0usize..20_000, any::<u8>()), 0..4), reseal in any::<bool>()) {
        let good = fixture().to_bytes().unwrap();
        let mut b = good[..cut.min(good.len())].to_vec();
        for (at, x) in flips {
            if !b.is_empty() {
                let i = at % b.len();
                b[i] ^= x;
            }
        }
        if reseal && b.len() > HEADER_LEN {
            let mut h = Header::parse(b[..HEADER_LEN].try_into().unwrap());
            h.pkg_version = PKG_GZIP_MD5;
            h.header_size = HEADER_LEN as u64;
            let payload = b[HEADER_LEN..].to_vec();
            h.seal(&payload);
            b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
        }
        let opts = ReadOptions { verify_hash: !reseal, ..ReadOptions::default() };
        if let Ok(n) = Neff::from_bytes(&b, &opts) {
            for d in n.subgraph_dirs() {
                let _ = n.subgraph(&d);
            }
        }
        // The tar payload alone, mutated, read as a bare archive.
        let tar = archive::write_plain_tar(&fixture().members).unwrap();
        let mut t = tar[..cut.min(tar.len())].to_vec();
        if let Some(x) = t.get_mut(cut % 600) {
            *x ^= 0x5A;
        }
        let _ = Neff::from_bytes(&t, &ReadOptions::default());
    }

    #[test]
    fn mutated_npy_headers_never_panic(flips in proptest::collection::vec((0usize..160, any::<u8>()), 1..6), cut in 0usize..200) {
        let mut image = npy::encode_npy(NumFormat::Float32, &[3, 2], &[7u8; 24]).unwrap();
        for (at, x) in flips {
            let i = at % image.len();
            image[i] ^= x;
        }
        let _ = npy::read_npy(&image);
        let _ = npy::read_npy(&image[..cut.min(image.len())]);
    }
}
