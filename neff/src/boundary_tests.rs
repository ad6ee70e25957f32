//! Boundary tests of the numeric comparisons the NEFF reader makes: every limit is tried at
//! the bound, one before it and one past it (member counts and sizes of the archive and of a
//! directory, the header's sizes, queue and dimension counts, semaphore and event ids, the
//! ranks of a replica group, the output index of a manifest head, the header's text fields,
//! var ids, `.npy` header, data and dimension limits, unpacked path depth and length), and the
//! reader's choice of the first `__kelf` node.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::archive::{read_members, write_plain_tar};
use super::schema::{validate_blocks, MAX_DMA_DIMS, MAX_DMA_QUEUES};
use super::*;

fn members(n: usize, size: usize) -> BTreeMap<String, Vec<u8>> {
    (0..n)
        .map(|i| (format!("m{i:03}"), vec![b'x'; size]))
        .collect()
}

fn limits(max_members: usize, max_member_bytes: u64, max_total_bytes: u64) -> Limits {
    Limits {
        max_total_bytes,
        max_member_bytes,
        max_members,
    }
}

/// `count > max_members`: an archive of exactly `max_members` entries is read, one more is
/// refused, for limits 1, 2 and 7 (the count is of entries, directories included).
#[test]
fn an_archive_holds_at_most_max_members_entries() {
    for max in [1usize, 2, 7] {
        let l = limits(max, 1 << 20, 1 << 20);
        for n in [max - 1, max] {
            let tar = write_plain_tar(&members(n, 3)).unwrap();
            let (back, _) = read_members(&tar, &l).unwrap_or_else(|e| panic!("{n} of {max}: {e}"));
            assert_eq!(back.len(), n);
        }
        let tar = write_plain_tar(&members(max + 1, 3)).unwrap();
        assert!(
            matches!(read_members(&tar, &l), Err(NeffError::TooManyMembers { limit }) if limit == max),
            "{} entries against a limit of {max}",
            max + 1
        );
    }
    // A directory entry counts: one file and one directory against a limit of one.
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_path("d").unwrap();
    h.set_size(0);
    h.set_cksum();
    b.append(&h, &[][..]).unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_path("d/f").unwrap();
    h.set_size(1);
    h.set_cksum();
    b.append(&h, &b"x"[..]).unwrap();
    let tar = b.into_inner().unwrap();
    assert!(matches!(
        read_members(&tar, &limits(1, 64, 64)),
        Err(NeffError::TooManyMembers { limit: 1 })
    ));
    assert_eq!(read_members(&tar, &limits(2, 64, 64)).unwrap().0.len(), 1);
}

/// `size > max_member_bytes` and `total > max_total_bytes`: a member of exactly the limit and
/// a total of exactly the limit are read; one byte more is refused, with the right error.
#[test]
fn member_and_total_sizes_are_limited_inclusively() {
    for (max, gz) in [(100u64, false), (4096, true)] {
        let one = |size: u64| {
            let m = members(1, size as usize);
            if gz {
                archive::write_gzip_tar(&m).unwrap()
            } else {
                write_plain_tar(&m).unwrap()
            }
        };
        let l = limits(10, max, 1 << 20);
        for size in [max - 1, max] {
            assert_eq!(
                read_members(&one(size), &l).unwrap().0["m000"].len() as u64,
                size
            );
        }
        match read_members(&one(max + 1), &l) {
            Err(NeffError::MemberTooLarge { size, limit, .. }) => {
                assert_eq!((size, limit), (max + 1, max))
            }
            other => panic!("{other:?}"),
        }
    }
    // Three members of 40 bytes: a total limit of 120 holds them, 119 does not.
    let tar = write_plain_tar(&members(3, 40)).unwrap();
    assert_eq!(read_members(&tar, &limits(10, 40, 120)).unwrap().0.len(), 3);
    assert_eq!(read_members(&tar, &limits(10, 40, 121)).unwrap().0.len(), 3);
    assert!(matches!(
        read_members(&tar, &limits(10, 40, 119)),
        Err(NeffError::ArchiveTooLarge { limit: 119 })
    ));
}

/// A fresh empty directory under the system's temporary directory.
fn scratch_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tpbsim-neff-bounds-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `Neff::from_dir` applies the same limits inclusively: count, member size, total size.
#[test]
fn a_directory_is_packed_within_the_same_limits() {
    let d = scratch_dir("dir");
    for (name, data) in members(3, 40) {
        std::fs::write(d.join(name), data).unwrap();
    }
    let ok = |l: Limits| Neff::from_dir(&d, "k", &l).map(|n| n.members.len());
    assert_eq!(ok(limits(3, 40, 120)).unwrap(), 3);
    assert!(matches!(
        ok(limits(2, 40, 120)),
        Err(NeffError::TooManyMembers { limit: 2 })
    ));
    assert!(matches!(
        ok(limits(3, 39, 120)),
        Err(NeffError::MemberTooLarge {
            size: 40,
            limit: 39,
            ..
        })
    ));
    assert!(matches!(
        ok(limits(3, 40, 119)),
        Err(NeffError::ArchiveTooLarge { limit: 119 })
    ));
    let _ = std::fs::remove_dir_all(&d);
}

/// An image of a small valid NEFF and its header.
fn image() -> (Vec<u8>, Header) {
    let mut n = Neff::new("bounds").unwrap();
    n.members.insert("a.bin".into(), vec![1, 2, 3]);
    let bytes = n.to_bytes().unwrap();
    let h = Header::parse(bytes[..HEADER_LEN].try_into().unwrap());
    (bytes, h)
}

fn with_header(bytes: &[u8], h: &Header) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[..HEADER_LEN].copy_from_slice(&h.to_bytes());
    b
}

/// `header_size >= file_len` and `data_size > available || data_size == 0`.
#[test]
fn header_and_data_sizes_must_fit_the_file() {
    let (bytes, h) = image();
    let len = bytes.len() as u64;
    let read = |b: &[u8]| Neff::from_bytes(b, &ReadOptions::default());
    // header_size: any value below the file length is read; the file length is refused.
    for hs in [0, HEADER_LEN as u64, len - 1] {
        let b = with_header(
            &bytes,
            &Header {
                header_size: hs,
                ..h.clone()
            },
        );
        read(&b).unwrap_or_else(|e| panic!("header_size {hs}: {e}"));
    }
    for hs in [len, len + 1] {
        let b = with_header(
            &bytes,
            &Header {
                header_size: hs,
                ..h.clone()
            },
        );
        assert!(
            matches!(read(&b), Err(NeffError::HeaderSize { header_size, file_len }) if (header_size, file_len) == (hs, len)),
            "header_size {hs}"
        );
    }
    // data_size: exactly what follows the header is read; one more byte, or none, is refused.
    let available = len - HEADER_LEN as u64;
    assert_eq!(h.data_size, available);
    for ds in [0, available + 1] {
        let b = with_header(
            &bytes,
            &Header {
                data_size: ds,
                ..h.clone()
            },
        );
        assert!(
            matches!(read(&b), Err(NeffError::DataSize { data_size, available: a }) if (data_size, a) == (ds, available)),
            "data_size {ds}"
        );
    }
    // One byte of zero padding after the payload: data_size one below what is available.
    let mut padded = bytes.clone();
    padded.push(0);
    assert_eq!(read(&padded).unwrap().members["a.bin"], vec![1, 2, 3]);
}

/// The runtime accepts major versions 0..=2: 2 is no issue, 3 is.
#[test]
fn major_version_two_is_the_last_the_runtime_accepts() {
    let (_, h) = image();
    for major in [0u64, 1, 2] {
        let h = Header {
            neff_version_major: major,
            ..h.clone()
        };
        assert!(h.runtime_compat_issues().is_empty(), "{major}");
    }
    for major in [3u64, u64::MAX] {
        let h = Header {
            neff_version_major: major,
            ..h.clone()
        };
        let issues = h.runtime_compat_issues();
        assert_eq!(issues.len(), 1, "{major}");
        assert!(
            issues[0].contains(&format!("neff_version_major {major} > 2")),
            "{issues:?}"
        );
    }
}

fn def_with(queues: usize) -> DefJson {
    let mut a = Variable::new(0, "a", VarKind::Input);
    a.size = Some(64);
    a.dtype = Some(tpbsim_isa::NumFormat::Int8);
    let mut b = Variable::new(1, "b", VarKind::Output);
    b.size = Some(64);
    b.dtype = Some(tpbsim_isa::NumFormat::Int8);
    DefJson {
        var: vec![a, b],
        dma_queue: (0..queues)
            .map(|i| DmaQueue::new(format!("q{i}")))
            .collect(),
        ..Default::default()
    }
}

/// `dma_queue.len() > MAX_DMA_QUEUES` (11 × 16).
#[test]
fn a_def_json_names_at_most_176_queues() {
    assert_eq!(MAX_DMA_QUEUES, 176);
    for n in [MAX_DMA_QUEUES - 1, MAX_DMA_QUEUES] {
        def_with(n).validate("d").unwrap();
    }
    let e = def_with(MAX_DMA_QUEUES + 1)
        .validate("d")
        .unwrap_err()
        .to_string();
    assert!(e.contains("177 queues; at most 176"), "{e}");
}

fn entry_ok(e: &DmaEntry) -> Result<(), String> {
    let d = def_with(1);
    let block = DmaBlock {
        queue: Some("q0".into()),
        instance_name: None,
        id: None,
        desc: vec![e.clone()],
        extra: serde_json::Map::new(),
    };
    validate_blocks("x.json", "dma", &[block], &d).map_err(|e| e.to_string())
}

fn copy(sizes: Vec<u64>) -> DmaEntry {
    DmaEntry::copy(VarRef::Id(0), VarRef::Id(1), sizes)
}

/// `sizes.len() > MAX_DMA_DIMS`: 8 dimensions are read, 9 refused, on either side.
#[test]
fn a_dma_side_has_at_most_eight_dimensions() {
    assert_eq!(MAX_DMA_DIMS, 8);
    for n in [MAX_DMA_DIMS - 1, MAX_DMA_DIMS] {
        let mut sizes = vec![1u64; n];
        sizes[0] = 4;
        entry_ok(&copy(sizes)).unwrap_or_else(|e| panic!("{n} dims: {e}"));
    }
    let mut e = copy(vec![4]);
    e.from_sizes = vec![1; MAX_DMA_DIMS + 1];
    e.from_sizes[0] = 4;
    let err = entry_ok(&e).unwrap_err();
    assert!(
        err.contains("9 dimensions; at most 8") && err.contains("from_sizes"),
        "{err}"
    );
    let mut e = copy(vec![4]);
    e.to_sizes = vec![1; MAX_DMA_DIMS + 1];
    e.to_sizes[0] = 4;
    let err = entry_ok(&e).unwrap_err();
    assert!(
        err.contains("9 dimensions; at most 8") && err.contains("to_sizes"),
        "{err}"
    );
}

/// Semaphore ids below 256, event ids below 256, semaphore values that fit 32 bits.
#[test]
fn dma_entry_semaphores_events_and_values_at_their_bounds() {
    for s in [0u32, 254, 255] {
        let mut e = copy(vec![4]);
        e.sem = Some(s);
        entry_ok(&e).unwrap_or_else(|err| panic!("sem {s}: {err}"));
    }
    let mut e = copy(vec![4]);
    e.sem = Some(256);
    assert!(entry_ok(&e).unwrap_err().contains("256"));
    for ev in [0u32, 254, 255] {
        let mut e = copy(vec![4]);
        e.event = Some(ev);
        entry_ok(&e).unwrap_or_else(|err| panic!("event {ev}: {err}"));
    }
    let mut e = copy(vec![4]);
    e.event = Some(256);
    let err = entry_ok(&e).unwrap_err();
    assert!(err.contains("event 256 is not below 256"), "{err}");
    for v in [u64::from(u32::MAX) - 1, u64::from(u32::MAX)] {
        let mut e = copy(vec![4]);
        e.sem = Some(1);
        e.sem_op = Some(SemOp::Add);
        e.sem_value = Some(v);
        entry_ok(&e).unwrap_or_else(|err| panic!("sem_value {v}: {err}"));
    }
    let mut e = copy(vec![4]);
    e.sem = Some(1);
    e.sem_op = Some(SemOp::Add);
    e.sem_value = Some(1 << 32);
    let err = entry_ok(&e).unwrap_err();
    assert!(err.contains("does not fit a 32-bit semaphore"), "{err}");
}

/// `end > size` and `start < 0`: an access ending on the variable's last byte or starting on
/// its first is read; one byte further either way is refused.
#[test]
fn an_access_stays_within_its_variable() {
    // 64-byte int8 variables: 64 elements from offset 0, 63 from offset 1, 1 from offset 63.
    for (off, n) in [(0u64, 64u64), (1, 63), (63, 1)] {
        let mut e = copy(vec![n]);
        e.from_offset = off;
        entry_ok(&e).unwrap_or_else(|err| panic!("offset {off}, {n}: {err}"));
    }
    // (The destination `b` is checked first: 65 elements overrun it before the source.)
    for (off, n, reach, var) in [(1u64, 64u64, 65, "a"), (64, 1, 65, "a"), (0, 65, 65, "b")] {
        let mut e = copy(vec![n]);
        e.from_offset = off;
        e.to_sizes = vec![n];
        let err = entry_ok(&e).unwrap_err();
        assert!(
            err.contains(&format!("reaches byte {reach} of `{var}`")),
            "{err}"
        );
    }
    // A negative step from offset 3 reaches back 3 elements: byte 0, then one before it.
    let mut e = copy(vec![4]);
    e.from_offset = 3;
    e.from_steps = Some(vec![-1]);
    entry_ok(&e).unwrap();
    let mut e = copy(vec![5]);
    e.from_offset = 3;
    e.from_steps = Some(vec![-1]);
    let err = entry_ok(&e).unwrap_err();
    assert!(err.contains("access starts 1 bytes before `a`"), "{err}");
}

/// `replica_groups`, `src_target_pairs` and `#rank_world_size` are read by the collective
/// machine, so the scan never lists them as unmodelled, whatever the size of a group.
#[test]
fn replica_groups_and_pairs_are_modelled() {
    let scan = |key: &str, v: Value| {
        let mut out = Vec::new();
        unmodelled::Scan { out: &mut out }.def_json("sg/def.json", &json!({ key: v }));
        out.iter()
            .filter(|u| u.path == key)
            .map(|u| u.affects_results)
            .collect::<Vec<_>>()
    };
    for g in [
        json!([]),
        json!([[0]]),
        json!([[0, 1]]),
        json!([[0], [1, 2]]),
        json!([[0, 1, 2, 3]]),
    ] {
        assert_eq!(scan("replica_groups", g.clone()), Vec::<bool>::new(), "{g}");
    }
    assert_eq!(
        scan("src_target_pairs", json!([[0, 1], [1, 0]])),
        Vec::<bool>::new()
    );
    assert_eq!(scan("#rank_world_size", json!(4)), Vec::<bool>::new());
    // A member nobody reads is still listed: the scan itself is live.
    assert!(!scan("no_such_member_at_all", json!(1)).is_empty());
}

/// A TVM manifest with one input (row 0) and a node of two outputs (rows 1 and 2).
fn manifest(heads: Value) -> Neff {
    let v = json!({
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "tvm_op", "name": "sg", "inputs": [[0, 0, 0]],
             "output_names": ["out_a", "out_b"],
             "attrs": {"func_name": "__kelf", "kelf": "kelf-a.json"}}
        ],
        "arg_nodes": [0],
        "node_row_ptr": [0, 1, 3],
        "heads": heads,
        "attrs": {
            "dltype": ["list_str", ["float32", "bfloat16", "int8"]],
            "shape": ["list_shape", [[2], [4], [8]]]
        }
    });
    let mut n = Neff::new("m").unwrap();
    n.members
        .insert("neff.json".into(), serde_json::to_vec(&v).unwrap());
    n
}

/// A head `[node]` without an output index names the node's output 0, as `[node, 0, 0]` does;
/// `[node, 1, 0]` names output 1 and `[node, 2, 0]` (past the node's rows) names nothing.
#[test]
fn a_head_without_an_output_index_is_output_zero() {
    let t = |h: Value| manifest(h).host_tensors();
    let a = ("bfloat16".to_string(), vec![4u64]);
    let b = ("int8".to_string(), vec![8u64]);
    let x = ("float32".to_string(), vec![2u64]);
    let want_a = BTreeMap::from([("x".to_string(), x.clone()), ("out_a".to_string(), a)]);
    assert_eq!(t(json!([[1]])), want_a);
    assert_eq!(t(json!([[1, 0, 0]])), want_a);
    assert_eq!(
        t(json!([[1, 1, 0]])),
        BTreeMap::from([("x".to_string(), x.clone()), ("out_b".to_string(), b)])
    );
    assert_eq!(
        t(json!([[1, 3, 0]])),
        BTreeMap::from([("x".to_string(), x)])
    );
}

/// The first node whose `func_name` is `__kelf` names the kelf; later ones are not read,
/// whatever they hold.
#[test]
fn the_first_kelf_node_names_the_kelf() {
    let kelf = |target: &str| {
        serde_json::to_vec(&json!({"graphs": [{"definition": "sg00/def.json"}], "target": target}))
            .unwrap()
    };
    let with_nodes = |extra: Vec<Value>| {
        let mut n = manifest(json!([[1, 0, 0]]));
        let mut v: Value = serde_json::from_slice(&n.members["neff.json"]).unwrap();
        v["nodes"].as_array_mut().unwrap().extend(extra);
        n.members
            .insert("neff.json".into(), serde_json::to_vec(&v).unwrap());
        n.members.insert("kelf-a.json".into(), kelf("first"));
        n.members.insert("kelf-b.json".into(), kelf("second"));
        n.members.insert("sg00/def.json".into(), b"{}".to_vec());
        n
    };
    let second = json!({"op": "tvm_op", "name": "sg2", "inputs": [],
        "attrs": {"func_name": "__kelf", "kelf": "kelf-b.json"}});
    let broken = json!({"op": "tvm_op", "name": "sg3", "inputs": [],
        "attrs": {"func_name": "__kelf"}});
    let not_string = json!({"op": "tvm_op", "name": "sg4", "inputs": [],
        "attrs": {"func_name": "__kelf", "kelf": 5}});
    let missing = json!({"op": "tvm_op", "name": "sg5", "inputs": [],
        "attrs": {"func_name": "__kelf", "kelf": "kelf-none.json"}});
    for extra in [
        vec![],
        vec![second.clone()],
        vec![broken],
        vec![not_string],
        vec![missing],
        vec![second],
    ] {
        let p = with_nodes(extra.clone())
            .plan()
            .unwrap_or_else(|e| panic!("{extra:?}: {e}"));
        assert_eq!(p.kelf.as_deref(), Some("kelf-a.json"), "{extra:?}");
        assert_eq!(
            p.target,
            Target::Named {
                name: "first".into(),
                source: "kelf-a.json target".into()
            }
        );
    }
}

/// `bytes.len() >= field.len()`: each text field of the header holds one byte less than its
/// width (the rest is the terminating NUL): at that length it is set and read back, one
/// byte more is refused with the field's maximum.
#[test]
fn header_text_fields_hold_one_byte_less_than_their_width() {
    type Setter = fn(&mut Header, &str) -> Result<(), HeaderTextError>;
    let fields: [(&str, Setter, usize); 2] = [
        ("name", Header::set_name, Header::default().name.len()),
        (
            "build_version",
            Header::set_build_version,
            Header::default().build_version.len(),
        ),
    ];
    for (field, set, width) in fields {
        for len in [0, width - 2, width - 1] {
            let mut h = Header::default();
            let text = "x".repeat(len);
            set(&mut h, &text).unwrap_or_else(|e| panic!("{field} of {len}: {e}"));
            let bytes = h.to_bytes();
            let back = Header::parse(&bytes);
            let stored = if field == "name" {
                back.name_str()
            } else {
                back.build_version_str()
            };
            assert_eq!(stored, text, "{field} of {len}");
        }
        for len in [width, width + 1] {
            assert_eq!(
                set(&mut Header::default(), &"x".repeat(len)),
                Err(HeaderTextError::TooLong {
                    field,
                    len,
                    max: width - 1
                })
            );
        }
    }
}

/// A `def.json` of variables with the given ids (the last an output), `check_var_ids` set.
fn def_with_ids(ids: &[u64], check: bool) -> DefJson {
    let var = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            let kind = if i + 1 == ids.len() {
                VarKind::Output
            } else {
                VarKind::Input
            };
            let mut v = Variable::new(id, format!("v{i}"), kind);
            v.size = Some(4);
            v.dtype = Some(tpbsim_isa::NumFormat::Int8);
            v
        })
        .collect();
    let mut d = DefJson {
        var,
        ..Default::default()
    };
    if check {
        d.extra.insert("check_var_ids".into(), json!(true));
    }
    d
}

/// `u32::try_from(var_id)`: ids up to `u32::MAX` are read, `u32::MAX + 1` is refused; with
/// `check_var_ids`, `largest + 1 == count`: ids `0..n` pass, the largest one higher fails.
#[test]
fn var_ids_fit_32_bits_and_are_dense_when_checked() {
    let max = u64::from(u32::MAX);
    for id in [max - 1, max] {
        def_with_ids(&[0, id], false)
            .validate("d")
            .unwrap_or_else(|e| panic!("var_id {id}: {e}"));
    }
    let e = def_with_ids(&[0, max + 1], false)
        .validate("d")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("4294967296 does not fit the runtime's 32-bit var_id"),
        "{e}"
    );
    for n in [1u64, 2, 5] {
        let dense: Vec<u64> = (0..n).collect();
        def_with_ids(&dense, true)
            .validate("d")
            .unwrap_or_else(|e| panic!("ids 0..{n}: {e}"));
        let mut gap = dense.clone();
        *gap.last_mut().unwrap() = n;
        let e = def_with_ids(&gap, true)
            .validate("d")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("largest is {n}, {n} variables")),
            "{gap:?}: {e}"
        );
        // Without the flag the same ids are read.
        def_with_ids(&gap, false).validate("d").unwrap();
    }
}

/// A version-2 `.npy` image of `n` int8 elements whose header (magic to dict end) is
/// `header` bytes long; the dict is padded with spaces as numpy pads it.
fn npy_with_header(header: usize, n: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '|i1', 'fortran_order': False, 'shape': ({n},), }}");
    let pad = header - 12 - dict.len() - 1;
    let mut image = b"\x93NUMPY\x02\x00".to_vec();
    image.extend_from_slice(&((header - 12) as u32).to_le_bytes());
    image.extend_from_slice(dict.as_bytes());
    image.extend(std::iter::repeat_n(b' ', pad));
    image.push(b'\n');
    assert_eq!(image.len(), header);
    image.extend((0..n).map(|i| i as u8));
    image
}

/// `.npy` limits: `start + len > MAX_HEADER_BYTES` (a header of exactly the maximum is read,
/// one byte more refused), `expected > max_data` (data of exactly the limit is read, a limit
/// one byte short refuses it before reading), and `shape.len() > MAX_NPY_DIMS` when writing.
#[test]
fn npy_header_data_and_dimension_limits() {
    use npy::{encode_npy, read_npy_from, MAX_HEADER_BYTES, MAX_NPY_DIMS};
    for header in [MAX_HEADER_BYTES - 1, MAX_HEADER_BYTES] {
        let a = read_npy_from(&npy_with_header(header, 3)[..], 3)
            .unwrap_or_else(|e| panic!("header of {header}: {e}"));
        assert_eq!((a.shape, a.data), (vec![3], vec![0, 1, 2]));
    }
    let e = read_npy_from(&npy_with_header(MAX_HEADER_BYTES + 1, 3)[..], 3).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("header of {} bytes", MAX_HEADER_BYTES + 1)),
        "{e}"
    );
    let image = npy_with_header(128, 16);
    for limit in [16, 17] {
        assert_eq!(read_npy_from(&image[..], limit).unwrap().data.len(), 16);
    }
    match read_npy_from(&image[..], 15) {
        Err(NpyError::TooLarge {
            expected, limit, ..
        }) => assert_eq!((expected, limit), (16, 15)),
        other => panic!("{other:?}"),
    }
    for dims in [MAX_NPY_DIMS - 1, MAX_NPY_DIMS] {
        let image = encode_npy(tpbsim_isa::NumFormat::Int8, &vec![1; dims], &[7])
            .unwrap_or_else(|e| panic!("{dims} dims: {e}"));
        let back = npy::read_npy(&image).unwrap();
        assert_eq!((back.shape.len(), back.data), (dims, vec![7]));
    }
    let e = encode_npy(
        tpbsim_isa::NumFormat::Int8,
        &vec![1; MAX_NPY_DIMS + 1],
        &[7],
    )
    .unwrap_err();
    assert!(e.to_string().contains("65 dimensions"), "{e}");
}

/// `name.len() > 4096 || slashes >= 1024`: a member path of 1024 components is unpacked,
/// 1025 are refused before anything is written; a path of 4096 bytes passes the length
/// check (the system may still refuse it), 4097 bytes are refused by it.
#[test]
fn unpacked_member_paths_are_limited_in_depth_and_length() {
    let unpack = |name: &str| {
        let mut n = Neff::new("k").unwrap();
        n.members.insert(name.into(), b"x".to_vec());
        let dest = tempfile::tempdir().unwrap();
        let r = n.unpack(dest.path(), false);
        let written = std::fs::read_dir(dest.path()).unwrap().count();
        (r, written, dest)
    };
    let deep = |components: usize| vec!["d"; components].join("/");
    // (Fewer components are unpacked by every other unpack test; each level is a few
    // system calls, so only the bound itself is tried this deep.)
    let name = deep(1024);
    let (r, _, dest) = unpack(&name);
    r.unwrap_or_else(|e| panic!("1024 components: {e}"));
    assert_eq!(std::fs::read(dest.path().join(&name)).unwrap(), b"x");
    let limit_refusal = |r: Result<(), NeffError>| match r {
        Err(NeffError::UnsafePath { reason, .. }) if reason.contains("cannot be unpacked") => {
            Some(reason)
        }
        _ => None,
    };
    let (r, written, _d) = unpack(&deep(1025));
    let reason = limit_refusal(r).expect("1025 components refused by the limit");
    assert!(reason.contains("in 1025 components"), "{reason}");
    assert_eq!(written, 0, "nothing written");
    // 4096 and 4097 bytes in components of at most 255 bytes.
    let long = |len: usize| {
        let mut s = String::new();
        while s.len() < len {
            if !s.is_empty() {
                s.push('/');
            }
            let part = (len - s.len()).min(200);
            s.push_str(&"p".repeat(part));
        }
        assert_eq!(s.len(), len);
        s
    };
    for len in [4095, 4096] {
        let (r, _, _d) = unpack(&long(len));
        assert_eq!(limit_refusal(r), None, "{len} bytes");
    }
    let (r, written, _d) = unpack(&long(4097));
    let reason = limit_refusal(r).expect("4097 bytes refused by the limit");
    assert!(reason.starts_with("4097 bytes"), "{reason}");
    assert_eq!(written, 0, "nothing written");
}

/// Variable types the machine does not model are listed as changing results, at the
/// variable's path in either form of `var`; the modelled ones are not listed.
#[test]
fn unmodelled_variable_types_are_listed_at_their_paths() {
    let scan = |var: Value| {
        let mut out = Vec::new();
        unmodelled::Scan { out: &mut out }.def_json("sg/def.json", &json!({ "var": var }));
        out.into_iter()
            .filter(|u| u.path.ends_with(".type") || u.path.ends_with("].type"))
            .map(|u| (u.path, u.affects_results, u.note))
            .collect::<Vec<_>>()
    };
    for t in ["remote", "shared", "sharded", "main"] {
        let got = scan(json!({ "x": { "type": t, "var_id": 0 } }));
        assert_eq!(got.len(), 1, "{t}: {got:?}");
        assert_eq!((got[0].0.as_str(), got[0].1), ("var.x.type", true), "{t}");
        assert!(
            got[0].2.contains("variable type not simulated"),
            "{t}: {}",
            got[0].2
        );
    }
    let got = scan(json!([{ "name": "l", "type": "list", "var_id": 0 }]));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].1), ("var[0].type", true));
    assert!(
        got[0].2.contains("list variables are not simulated"),
        "{}",
        got[0].2
    );
    for t in ["input", "output", "const", "file", "virtual", "dge-table"] {
        assert_eq!(scan(json!({ "x": { "type": t, "var_id": 0 } })), [], "{t}");
    }
}
