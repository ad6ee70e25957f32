//! proptest strategies for small NEFF images (cargo feature `proptest`).
//!
//! [`arb_neff`] generates an in-memory [`Neff`] whose members form a valid single-subgraph
//! kernel: `neff.json`, `sg00/def.json` with input, output and `file` variables (and a DMA
//! queue), one or two engine streams (named through `definition.<tok>._instr` or by the
//! `<tok>_instr` token), an optional DMA sidecar per stream, and one `.npy` member per `file`
//! variable whose dtype, shape and size match the variable. Either package version (gzip +
//! MD5 or plain tar + SHA-256) is drawn. [`Neff::subgraph`] accepts every generated image.

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::{engine_token, npy, Neff, PKG_GZIP_MD5, PKG_TAR_SHA256};
use tpbsim_isa::bundle::BUNDLE_SIZE;
use tpbsim_isa::engine::Engine;
use tpbsim_isa::NumFormat;

/// The subgraph directory of generated images.
pub const SUBGRAPH: &str = "sg00";

/// Dtypes of generated variables and `.npy` members, with their `def.json` names.
const DTYPES: [(NumFormat, &str); 5] = [
    (NumFormat::Uint8, "uint8"),
    (NumFormat::Int8, "int8"),
    (NumFormat::Float16, "float16"),
    (NumFormat::Int32, "int32"),
    (NumFormat::Float32, "float32"),
];

/// One generated engine stream.
#[derive(Clone, Debug)]
struct StreamSpec {
    engine: Engine,
    bytes: Vec<u8>,
    /// Named by `definition.<tok>._instr` (else by the `<tok>_instr` member name).
    named: bool,
    sidecar: bool,
}

fn arb_stream(engine: Engine) -> impl Strategy<Value = StreamSpec> {
    (1usize..=6, any::<bool>(), any::<bool>()).prop_flat_map(move |(n, named, sidecar)| {
        prop::collection::vec(any::<u8>(), n * BUNDLE_SIZE).prop_map(move |bytes| StreamSpec {
            engine,
            bytes,
            named,
            sidecar,
        })
    })
}

/// A `file` variable: dtype index, shape, data.
fn arb_file_var() -> impl Strategy<Value = (usize, [u64; 2], Vec<u8>)> {
    (0..DTYPES.len(), 1u64..=4, 1u64..=8).prop_flat_map(|(d, r, c)| {
        let len = (r * c) as usize * DTYPES[d].0.container_bytes();
        prop::collection::vec(any::<u8>(), len).prop_map(move |data| (d, [r, c], data))
    })
}

/// Small valid NEFF images (see the module documentation).
pub fn arb_neff() -> impl Strategy<Value = Neff> {
    let engines = prop::sample::subsequence(Engine::ALL.to_vec(), 1..=2);
    (
        "[a-z][a-z0-9_-]{0,15}",
        engines.prop_flat_map(|es| es.into_iter().map(arb_stream).collect::<Vec<_>>()),
        prop::collection::vec(arb_file_var(), 0..=2),
        (0..DTYPES.len(), 1u64..=4, 1u64..=16),
        any::<bool>(),
    )
        .prop_map(|(name, streams, files, (io_dtype, rows, cols), gzip)| {
            build(&name, &streams, &files, (io_dtype, [rows, cols]), gzip)
        })
}

fn build(
    name: &str,
    streams: &[StreamSpec],
    files: &[(usize, [u64; 2], Vec<u8>)],
    io: (usize, [u64; 2]),
    gzip: bool,
) -> Neff {
    let mut n = match Neff::new(name) {
        Ok(n) => n,
        // The name pattern only produces legal names.
        Err(e) => unreachable!("generated NEFF name rejected: {e}"),
    };
    n.header.pkg_version = if gzip { PKG_GZIP_MD5 } else { PKG_TAR_SHA256 };
    n.header.requested_tpb_count = 1;
    n.header.num_tpb = 1;
    let (io_dtype, shape) = io;
    let (dt, dt_name) = DTYPES[io_dtype];
    let io_size = shape[0] * shape[1] * dt.container_bytes() as u64;
    let mut vars = vec![
        json!({"var_id": 0, "name": "in0", "type": "input", "size": io_size, "dtype": dt_name, "shape": shape}),
        json!({"var_id": 1, "name": "out0", "type": "output", "size": io_size, "dtype": dt_name, "shape": shape}),
    ];
    let m = &mut n.members;
    for (i, (d, fshape, data)) in files.iter().enumerate() {
        let (fdt, fname) = DTYPES[*d];
        let file = format!("const{i}.npy");
        vars.push(
            json!({"var_id": 2 + i, "name": format!("c{i}"), "type": "file", "dtype": fname,
                         "shape": fshape, "size": data.len(), "file_name": file}),
        );
        match npy::encode_npy(fdt, fshape, data) {
            Ok(image) => m.insert(format!("{SUBGRAPH}/{file}"), image),
            Err(e) => unreachable!("generated .npy rejected: {e}"),
        };
    }
    let mut definition = serde_json::Map::new();
    for s in streams {
        let tok = engine_token(s.engine);
        let member = if s.named {
            definition.insert(
                tok.to_string(),
                json!({"_instr": s.engine.stream_file_name()}),
            );
            format!("{SUBGRAPH}/{}", s.engine.stream_file_name())
        } else {
            format!("{SUBGRAPH}/{tok}_instr")
        };
        m.insert(member, s.bytes.clone());
        if s.sidecar {
            let title = s.engine.stream_file_name().trim_end_matches(".bin");
            let n_elems = shape[0] * shape[1];
            let sidecar = json!({"dma": [{"queue": "in", "id": 0, "desc": [
                {"id": 0, "from": "in0", "to": "out0", "from_sizes": shape, "to_sizes": [n_elems], "sem": 1}
            ]}]});
            m.insert(format!("{SUBGRAPH}/{title}.json"), to_vec(&sidecar));
        }
    }
    let def = json!({
        "definition": Value::Object(definition),
        "var": vars,
        "dma_queue": [{"name": "in", "id": 0, "owner": "in", "semaphore": 1}],
    });
    m.insert(format!("{SUBGRAPH}/def.json"), to_vec(&def));
    m.insert(
        "neff.json".into(),
        to_vec(&json!({"revision": "0.5", "target_arch": "cayman", "graphs": {}})),
    );
    n
}

fn to_vec(v: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail.
    serde_json::to_vec_pretty(v).unwrap_or_default()
}
