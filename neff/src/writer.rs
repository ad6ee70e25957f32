//! Writing the runtime's layout (R `neff/metadata-schema.md` §1, G `neff/concrete-carve.md`):
//! `neff.json` as a TVM graph whose `__kelf` node names `kelf-a.json`, the kelf's `graphs[]`
//! naming each `sgNN/def.json`, `var` and `dma_queue` as objects keyed by name, each engine's
//! JSON (`sgNN/pe.json`: `dma`, `instr`, `name`) named from `def.json`, lowercase streams
//! (`sgNN/pe.bin`) and the constants the variables name. A NEFF written this way is read by the
//! same path as one from the real toolchain.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::reader::{Reader, Target};
use super::schema::{engine_token, VarKind};
use super::{join, Neff, NeffError, Subgraph};
use tpbsim_isa::engine::Engine;

/// The kelf member the writer names.
pub const KELF_MEMBER: &str = "kelf-a.json";

/// What [`to_runtime_layout`] produced.
#[derive(Debug)]
pub struct Repacked {
    /// The NEFF in the runtime's layout.
    pub neff: Neff,
    /// Members of the input no manifest named, left out.
    pub ignored: Vec<String>,
}

fn pack_err(what: &str, e: impl std::fmt::Display) -> NeffError {
    NeffError::Pack {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

fn to_json(v: &impl serde::Serialize, what: &str) -> Result<Vec<u8>, NeffError> {
    let mut out = serde_json::to_vec_pretty(v).map_err(|e| pack_err(what, e))?;
    out.push(b'\n');
    Ok(out)
}

/// The same kernel in the runtime's layout, keeping only the members the manifests name.
/// A NEFF already read by the runtime reader keeps its members verbatim; one read by name is
/// rewritten. Every subgraph is parsed and checked (DMA sides against their variables) first.
pub fn to_runtime_layout(n: &Neff) -> Result<Repacked, NeffError> {
    let plan = n.plan()?;
    let sgs = n.subgraphs()?;
    n.check_reachable(&sgs)?;
    let mut out = Neff {
        header: n.header.clone(),
        layout: super::Layout::Headered,
        digest: super::DigestStatus::NotChecked,
        members: Default::default(),
    };
    let mut used: BTreeSet<String> = sgs.iter().flat_map(|s| s.used.iter().cloned()).collect();
    if plan.reader == Reader::Runtime {
        used.insert("neff.json".into());
        used.extend(plan.kelf.iter().cloned());
        for m in &used {
            if let Some(d) = n.members.get(m) {
                out.members.insert(m.clone(), d.clone());
            }
        }
    } else {
        let target = match &plan.target {
            Target::Named { name, .. } => name.clone(),
            Target::Any { .. } | Target::Absent => "*".to_string(),
        };
        let mut graphs = Vec::new();
        for (i, sg) in sgs.iter().enumerate() {
            let dir = if sg.dir.is_empty() {
                format!("sg{i:02}")
            } else {
                sg.dir.clone()
            };
            rewrite_subgraph(n, sg, &dir, &mut out)?;
            graphs.push(json!({"definition": join(&dir, "def.json"), "name": dir}));
        }
        out.members.insert(
            KELF_MEMBER.into(),
            to_json(
                &json!({"graphs": graphs, "target": target, "version": "0.5"}),
                KELF_MEMBER,
            )?,
        );
        out.members
            .insert("neff.json".into(), to_json(&tvm_graph(&sgs), "neff.json")?);
        if n.members.contains_key("neff.json") {
            // Its target went to the kelf member.
            used.insert("neff.json".into());
        }
    }
    let ignored = n
        .members
        .keys()
        .filter(|m| !used.contains(*m))
        .cloned()
        .collect();
    Ok(Repacked { neff: out, ignored })
}

fn rewrite_subgraph(n: &Neff, sg: &Subgraph, dir: &str, out: &mut Neff) -> Result<(), NeffError> {
    let def_member = join(dir, "def.json");
    let mut def = serde_json::to_value(&sg.def).map_err(|e| pack_err(&def_member, e))?;
    let obj = def
        .as_object_mut()
        .ok_or_else(|| pack_err(&def_member, "not an object"))?;
    obj.remove("definition");
    for key in ["var", "dma_queue"] {
        if let Some(Value::Array(items)) = obj.remove(key) {
            let mut keyed = Map::new();
            for mut item in items {
                let Some(o) = item.as_object_mut() else {
                    continue;
                };
                let Some(Value::String(name)) = o.remove("name") else {
                    continue;
                };
                keyed.insert(name, item);
            }
            obj.insert(key.into(), Value::Object(keyed));
        }
    }
    for e in Engine::ALL {
        let tok = engine_token(e);
        let stream = sg.streams.get(&e);
        let side = sg.sidecars.get(&e);
        if stream.is_none() && side.is_none() {
            continue;
        }
        let json_member = format!("{tok}.json");
        obj.insert(tok.into(), Value::String(json_member.clone()));
        let mut ej = match side {
            Some(s) => serde_json::to_value(&s.sidecar).map_err(|err| pack_err(&s.member, err))?,
            None => json!({"dma": []}),
        };
        let eo = ej
            .as_object_mut()
            .ok_or_else(|| pack_err(&json_member, "not an object"))?;
        eo.remove("instr");
        if let Some(s) = stream {
            let bin = format!("{tok}.bin");
            eo.insert("instr".into(), Value::String(bin.clone()));
            out.members
                .insert(join(dir, &bin), s.stream.as_bytes().to_vec());
        }
        eo.entry("name")
            .or_insert_with(|| Value::String(format!("{tok}_array_json")));
        out.members
            .insert(join(dir, &json_member), to_json(&ej, &json_member)?);
    }
    for v in &sg.def.var {
        if let Some(f) = &v.file_name {
            let src = join(&sg.dir, f);
            let data = n.member(&src).ok_or_else(|| NeffError::MissingMember {
                member: src.clone(),
                wanted_by: format!("{} variable `{}`", sg.def_member, v.name),
            })?;
            out.members.insert(join(dir, f), data.to_vec());
        }
    }
    // The members the JSON names beside streams and constants (ACT and DVE tables, debug
    // files) keep their names relative to the subgraph directory.
    for m in sg.named.keys() {
        let rel = if sg.dir.is_empty() {
            m.as_str()
        } else {
            m.strip_prefix(&format!("{}/", sg.dir)).unwrap_or(m)
        };
        if let Some(data) = n.member(m) {
            out.members.insert(join(dir, rel), data.to_vec());
        }
    }
    out.members
        .insert(def_member.clone(), to_json(&def, &def_member)?);
    Ok(())
}

/// A TVM graph for the subgraphs' inputs and outputs: one `null` node per input, one `tvm_op`
/// node whose `attrs.func_name` is `"__kelf"` and `attrs.kelf` names the kelf member, the
/// inputs as `arg_nodes`, the outputs as `heads` named by `attrs.output_names`, and
/// `attrs.shape` / `attrs.dltype` per entry (R `neff/metadata-schema.md` §3).
fn tvm_graph(sgs: &[Subgraph]) -> Value {
    let io = |kind: VarKind| -> Vec<(String, String, Vec<u64>)> {
        let mut v: Vec<_> = sgs
            .iter()
            .flat_map(|s| s.def.var.iter())
            .filter(|v| v.kind == kind)
            .map(|v| {
                let (dtype, shape) = host_view(v);
                (v.name.clone(), dtype, shape)
            })
            .collect();
        v.sort();
        v
    };
    let (ins, outs) = (io(VarKind::Input), io(VarKind::Output));
    let mut nodes: Vec<Value> = ins
        .iter()
        .map(|(n, _, _)| json!({"op": "null", "name": n, "inputs": []}))
        .collect();
    let k = ins.len();
    nodes.push(json!({
        "op": "tvm_op",
        "name": "sg_tonga0",
        "attrs": {
            "func_name": "__kelf",
            "kelf": KELF_MEMBER,
            "num_inputs": ins.len().to_string(),
            "num_outputs": outs.len().to_string(),
        },
        "inputs": (0..k).map(|i| json!([i, 0, 0])).collect::<Vec<_>>(),
    }));
    let mut rows: Vec<usize> = (0..=k).collect();
    rows.push(k + outs.len());
    let all = ins.iter().chain(&outs);
    json!({
        "nodes": nodes,
        "arg_nodes": (0..k).collect::<Vec<_>>(),
        "heads": (0..outs.len()).map(|j| json!([k, j, 0])).collect::<Vec<_>>(),
        "node_row_ptr": rows,
        "attrs": {
            "shape": ["list_shape", all.clone().map(|(_, _, s)| s.clone()).collect::<Vec<_>>()],
            "dltype": ["list_str", all.map(|(_, d, _)| d.clone()).collect::<Vec<_>>()],
            "output_names": outs.iter().map(|(n, _, _)| n.clone()).collect::<Vec<_>>(),
        },
    })
}

/// The host dtype name and shape of a variable (bytes when it has no dtype).
fn host_view(v: &super::Variable) -> (String, Vec<u64>) {
    match (v.dtype, &v.shape) {
        (Some(d), Some(s)) => (d.name().to_string(), s.clone()),
        (Some(d), None) => (
            d.name().to_string(),
            vec![v.size.unwrap_or(0) / (d.container_bytes() as u64).max(1)],
        ),
        (None, _) => ("uint8".to_string(), vec![v.size.unwrap_or(0)]),
    }
}
