//! Which reader a NEFF takes, and what it leaves unmodelled.
//!
//! The runtime's reading order (R `neff/metadata-schema.md` §1, R `neff/section-taxonomy.md`)
//! is the first reader: `neff.json` (a TVM graph) → the kelf member named by the node whose
//! `attrs.func_name` is `"__kelf"` (`attrs.kelf`) → `graphs[].definition` → each `def.json` →
//! the engine JSONs it names (`"pe": "pe.json"`: `instr`, `dma`) → streams and constants.
//! When `neff.json` is not a TVM graph, every `def.json` member is a subgraph and its streams
//! are found by name (`definition.<tok>._instr`, `<tok>_instr`, `PE.bin`): the compiler-side
//! shapes and tpbsim's earlier dialect. Both readers fill the same [`super::Subgraph`].

use serde_json::Value;

use super::{Neff, NeffError};

/// How the subgraphs of a NEFF were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// neff.json (TVM graph) → kelf → graphs[].definition → def.json → engine JSONs.
    Runtime,
    /// Every `def.json` member; streams by name (compiler-side shapes, tpbsim's earlier dialect).
    ByName,
}

impl Reader {
    /// A one-line description.
    pub fn describe(self) -> &'static str {
        match self {
            Reader::Runtime => {
                "runtime (neff.json TVM graph -> kelf -> graphs[].definition -> def.json -> engine JSONs)"
            }
            Reader::ByName => {
                "by name (every def.json; streams from definition.<tok>._instr, <tok>_instr or PE.bin)"
            }
        }
    }
}

/// The generation a NEFF names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A name (`sunda`, `v2`, `cayman`, ...) and where it was found.
    Named {
        /// The value as written.
        name: String,
        /// `kelf-a.json target`, `neff.json target_arch`.
        source: String,
    },
    /// `*`: any generation (the runtime matches the present hardware).
    Any {
        /// Where it was found.
        source: String,
    },
    /// Nothing names one.
    Absent,
}

/// The subgraph plan of a NEFF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The reader used.
    pub reader: Reader,
    /// The kelf member (runtime reader).
    pub kelf: Option<String>,
    /// The target generation.
    pub target: Target,
    /// Subgraphs: (directory, def.json member), in the kelf's order or sorted.
    pub graphs: Vec<(String, String)>,
}

fn invalid(member: &str, path: impl Into<String>, message: impl Into<String>) -> NeffError {
    NeffError::Invalid {
        member: member.to_string(),
        path: path.into(),
        message: message.into(),
    }
}

pub(crate) fn parse_value(member: &str, bytes: &[u8]) -> Result<Value, NeffError> {
    super::schema::parse_json::<Value>(member, bytes)
}

/// The directory of a member path (`sg00/def.json` → `sg00`).
fn dir_of(member: &str) -> String {
    member
        .rsplit_once('/')
        .map(|(d, _)| d.to_string())
        .unwrap_or_default()
}

impl Neff {
    /// Decide the reader and list the subgraphs.
    pub fn plan(&self) -> Result<Plan, NeffError> {
        let manifest = match self.member("neff.json") {
            Some(b) => Some(parse_value("neff.json", b)?),
            None => None,
        };
        let tvm = manifest
            .as_ref()
            .and_then(|m| m.get("nodes"))
            .is_some_and(Value::is_array);
        if !tvm {
            let target = match manifest.as_ref().and_then(|m| m.get("target_arch")) {
                None => Target::Absent,
                Some(Value::String(s)) if s == "*" => Target::Any {
                    source: "neff.json target_arch".into(),
                },
                Some(Value::String(s)) => Target::Named {
                    name: s.clone(),
                    source: "neff.json target_arch".into(),
                },
                Some(_) => return Err(invalid("neff.json", "target_arch", "not a string")),
            };
            let graphs = self
                .members
                .keys()
                .filter(|k| *k == "def.json" || k.ends_with("/def.json"))
                .map(|k| (dir_of(k), k.clone()))
                .collect();
            return Ok(Plan {
                reader: Reader::ByName,
                kelf: None,
                target,
                graphs,
            });
        }
        let manifest = manifest.unwrap_or_default();
        let nodes = manifest["nodes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut kelf = None;
        for (i, node) in nodes.iter().enumerate() {
            let attrs = node.get("attrs");
            if attrs
                .and_then(|a| a.get("func_name"))
                .and_then(Value::as_str)
                != Some("__kelf")
            {
                continue;
            }
            let k = match attrs.and_then(|a| a.get("kelf")) {
                Some(Value::String(k)) => k.clone(),
                Some(_) => {
                    return Err(invalid(
                        "neff.json",
                        format!("nodes[{i}].attrs.kelf"),
                        "not a string (R neff/metadata-schema.md §3)",
                    ))
                }
                None => {
                    return Err(invalid(
                        "neff.json",
                        format!("nodes[{i}].attrs"),
                        "the __kelf node has no `kelf` attribute naming the kelf member",
                    ))
                }
            };
            kelf = Some((i, k));
            break;
        }
        let Some((ki, kelf)) = kelf else {
            return Err(invalid(
                "neff.json",
                "nodes",
                "no node has attrs.func_name \"__kelf\" (R neff/metadata-schema.md §3)",
            ));
        };
        let kbytes = self.member(&kelf).ok_or_else(|| NeffError::MissingMember {
            member: kelf.clone(),
            wanted_by: format!("neff.json nodes[{ki}].attrs.kelf"),
        })?;
        let kv = parse_value(&kelf, kbytes)?;
        let target = match kv.get("target") {
            None => Target::Absent,
            Some(Value::String(s)) if s == "*" => Target::Any {
                source: format!("{kelf} target"),
            },
            Some(Value::String(s)) => Target::Named {
                name: s.clone(),
                source: format!("{kelf} target"),
            },
            Some(_) => return Err(invalid(&kelf, "target", "not a string")),
        };
        let graphs_v = kv
            .get("graphs")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid(&kelf, "graphs", "missing or not an array"))?;
        let mut graphs = Vec::new();
        let mut listed = std::collections::HashMap::new();
        for (gi, g) in graphs_v.iter().enumerate() {
            let def = g.get("definition").and_then(Value::as_str).ok_or_else(|| {
                invalid(
                    &kelf,
                    format!("graphs[{gi}].definition"),
                    "missing or not a string",
                )
            })?;
            super::archive::normalize_member_path(def.as_bytes()).map_err(|reason| {
                invalid(
                    &kelf,
                    format!("graphs[{gi}].definition"),
                    format!("`{def}`: {reason}"),
                )
            })?;
            if !self.members.contains_key(def) {
                return Err(NeffError::MissingMember {
                    member: def.to_string(),
                    wanted_by: format!("{kelf} graphs[{gi}].definition"),
                });
            }
            if let Some(first) = listed.insert(def, gi) {
                return Err(invalid(
                    &kelf,
                    format!("graphs[{gi}].definition"),
                    format!("`{def}` is listed already by graphs[{first}]; each definition is loaded once, so it is listed once"),
                ));
            }
            graphs.push((dir_of(def), def.to_string()));
        }
        Ok(Plan {
            reader: Reader::Runtime,
            kelf: Some(kelf),
            target,
            graphs,
        })
    }

    /// The host-side tensors of a TVM `neff.json` by name: dtype name and shape, from
    /// `attrs.dltype` / `attrs.shape` indexed through `node_row_ptr` (R `neff/metadata-schema.md`
    /// §3). Inputs are the `arg_nodes`; outputs the `heads` (`[node, output index, ...]`),
    /// named by `attrs.output_names` (indexed by head), else the node's own `output_names`
    /// (indexed by output; neuronx-cc 2.23 writes them on the `__kelf` node, one per
    /// subgraph), else the node's `output`, else its `name`. Empty for a manifest that is not
    /// a TVM graph.
    pub fn host_tensors(&self) -> std::collections::BTreeMap<String, (String, Vec<u64>)> {
        let mut out = std::collections::BTreeMap::new();
        let Some(v) = self
            .member("neff.json")
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        else {
            return out;
        };
        let list = |key: &str| -> Option<Vec<Value>> {
            let a = v.get("attrs")?.get(key)?.as_array()?;
            // TVM writes [tag, values]; accept a bare list too.
            match a.as_slice() {
                [Value::String(_), Value::Array(x)] => Some(x.clone()),
                _ => Some(a.clone()),
            }
        };
        let (Some(dl), Some(sh), Some(nodes), Some(rows)) = (
            list("dltype"),
            list("shape"),
            v.get("nodes").and_then(Value::as_array),
            v.get("node_row_ptr").and_then(Value::as_array),
        ) else {
            return out;
        };
        let tensor = |eid: usize| -> Option<(String, Vec<u64>)> {
            let d = dl.get(eid)?.as_str()?.to_string();
            let s = sh
                .get(eid)?
                .as_array()?
                .iter()
                .map(Value::as_u64)
                .collect::<Option<Vec<_>>>()?;
            Some((d, s))
        };
        let row = |node: usize| {
            rows.get(node)
                .and_then(Value::as_u64)
                .and_then(|r| usize::try_from(r).ok())
        };
        for a in v
            .get("arg_nodes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(i) = a.as_u64().and_then(|i| usize::try_from(i).ok()) else {
                continue;
            };
            let name = nodes
                .get(i)
                .and_then(|n| n.get("name"))
                .and_then(Value::as_str);
            if let (Some(name), Some(t)) = (name, row(i).and_then(tensor)) {
                out.insert(name.to_string(), t);
            }
        }
        let names = v
            .get("attrs")
            .and_then(|a| a.get("output_names"))
            .and_then(Value::as_array);
        for (hi, h) in v
            .get("heads")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(h) = h.as_array() else { continue };
            let (Some(node), out_idx) = (
                h.first()
                    .and_then(Value::as_u64)
                    .and_then(|i| usize::try_from(i).ok()),
                h.get(1)
                    .and_then(Value::as_u64)
                    .and_then(|i| usize::try_from(i).ok())
                    .unwrap_or(0),
            ) else {
                continue;
            };
            let n = nodes.get(node);
            let name = names
                .and_then(|ns| ns.get(hi))
                .and_then(Value::as_str)
                .or_else(|| {
                    n.and_then(|n| n.get("output_names"))
                        .and_then(|ns| ns.get(out_idx))
                        .and_then(Value::as_str)
                })
                .or_else(|| n.and_then(|n| n.get("output")).and_then(Value::as_str))
                .or_else(|| n.and_then(|n| n.get("name")).and_then(Value::as_str));
            let t = row(node)
                .and_then(|r| r.checked_add(out_idx))
                .and_then(tensor);
            if let (Some(name), Some(t)) = (name, t) {
                // One head per subgraph may name the same tensor (neuronx-cc 2.23 LNC2:
                // `output0` twice); the first head's view is kept.
                out.entry(name.to_string()).or_insert(t);
            }
        }
        out
    }

    /// Non-empty members that look like engine streams (`PE.bin`, `pe.bin`, `Activation.bin`,
    /// `pe_instr`, ...) but that no subgraph reads, given the members the subgraphs use. (An
    /// empty one carries no program; the runtime's own test model ships an unnamed empty
    /// `sg00/sp.bin`.)
    pub fn stray_streams(&self, used: &std::collections::BTreeSet<String>) -> Vec<String> {
        self.members
            .iter()
            .filter(|(m, d)| !d.is_empty() && !used.contains(*m) && looks_like_stream(m))
            .map(|(m, _)| m.clone())
            .collect()
    }
}

/// Whether a member name has the shape of an engine stream.
pub fn looks_like_stream(member: &str) -> bool {
    let file = member
        .rsplit('/')
        .next()
        .unwrap_or(member)
        .to_ascii_lowercase();
    const NAMES: [&str; 6] = ["pe", "act", "activation", "pool", "dve", "sp"];
    NAMES
        .iter()
        .any(|n| file == format!("{n}.bin") || (*n != "activation" && file == format!("{n}_instr")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{to_runtime_layout, ReadOptions};
    use tpbsim_isa::Engine;

    fn fixture() -> Neff {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/real/concrete_carve.neff"
        );
        Neff::read(p, &ReadOptions::default()).unwrap()
    }

    #[test]
    fn the_runtime_reader_follows_neff_json_kelf_def_json_engine_jsons() {
        let n = fixture();
        let plan = n.plan().unwrap();
        assert_eq!(plan.reader, Reader::Runtime);
        assert_eq!(plan.kelf.as_deref(), Some("kelf-a.json"));
        assert!(matches!(plan.target, Target::Any { .. }));
        assert_eq!(
            plan.graphs,
            vec![("sg00".to_string(), "sg00/def.json".to_string())]
        );
        let sg = n.subgraph("sg00").unwrap();
        assert!(sg.def.keyed);
        assert_eq!(sg.def.var.len(), 5);
        assert_eq!(sg.def.variable("gradient_in").unwrap().var_id, 3);
        let q = sg.def.queue("q_gradient_out").unwrap();
        assert_eq!(
            (q.role(), q.owner.as_deref(), q.semaphore),
            (Some("out"), Some("pool"), Some(11))
        );
        assert_eq!(sg.stream(Engine::Pe).unwrap().len(), 1);
        assert_eq!(sg.stream(Engine::Pool).unwrap().len(), 3);
        assert!(
            sg.stream(Engine::Sp).is_none(),
            "def.json names no sp engine"
        );
        assert_eq!(sg.sidecar(Engine::Pool).unwrap().entry_count(), 2);
        assert!(sg.unmodelled.iter().all(|u| !u.affects_results));
        let host = n.host_tensors();
        assert_eq!(host["input"], ("float32".to_string(), vec![32]));
        assert_eq!(host["output"], ("float32".to_string(), vec![32]));
        n.check_reachable(&[sg]).unwrap();
    }

    #[test]
    fn keyed_entries_report_their_key_in_paths() {
        let mut n = fixture();
        let def = n.members.get_mut("sg00/def.json").unwrap();
        let text = String::from_utf8(def.clone()).unwrap().replacen(
            "\"size\": 128,\n      \"type\": \"tmp-buf\"",
            "\"size\": \"x\",\n      \"type\": \"tmp-buf\"",
            1,
        );
        *def = text.into_bytes();
        let e = n.subgraph("sg00").unwrap_err().to_string();
        assert!(e.contains("var.gradient_in.size"), "{e}");
    }

    #[test]
    fn a_kelf_node_without_its_member_or_name_is_an_error() {
        let mut n = fixture();
        n.members.remove("kelf-a.json");
        let e = n.plan().unwrap_err().to_string();
        assert!(
            e.contains("kelf-a.json") && e.contains("nodes[1].attrs.kelf"),
            "{e}"
        );
        let mut n = fixture();
        let j = String::from_utf8(n.members["neff.json"].clone())
            .unwrap()
            .replace("__kelf", "tvmgen");
        n.members.insert("neff.json".into(), j.into_bytes());
        assert!(n.plan().unwrap_err().to_string().contains("__kelf"));
    }

    #[test]
    fn writing_the_runtime_layout_keeps_a_runtime_neff_and_drops_listings() {
        let n = fixture();
        let r = to_runtime_layout(&n).unwrap();
        assert!(
            r.ignored
                .iter()
                .all(|m| m.ends_with(".asm") || m.starts_with("sg00/sp.")),
            "{:?}",
            r.ignored
        );
        for (m, d) in &r.neff.members {
            assert_eq!(Some(d), n.members.get(m), "{m} kept verbatim");
        }
        let back = to_runtime_layout(&r.neff).unwrap();
        assert_eq!(back.neff.members, r.neff.members);
    }

    #[test]
    fn stream_like_names() {
        for m in [
            "PE.bin",
            "sg00/pe.bin",
            "sg01/Activation.bin",
            "sg00/dve_instr",
            "x/SP.BIN",
        ] {
            assert!(looks_like_stream(m), "{m}");
        }
        for m in [
            "sg00/w.bin",
            "sg00/pe.json",
            "sg00/activation_instr",
            "pe.asm",
        ] {
            assert!(!looks_like_stream(m), "{m}");
        }
    }
}
