//! BIR JSON export: the model serialized to a value (keys sorted) and pretty-printed, each
//! instruction with its class fields flattened beside the common keys.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::super::model::{
    AccessPattern, Block, ClassFields, CollectiveFields, Function, Instruction, MatmultMxFields,
    Module, NkiKernelFields, Sb2SbFields,
};

/// The canonical JSON value of a module.
pub fn to_json_value(m: &Module) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

/// The canonical JSON text of a module (pretty-printed, trailing newline): the text of
/// [`to_json_value`], written without building that value (see [`write_json`]).
pub fn to_json_string(m: &Module) -> String {
    let mut out = Vec::new();
    // Writing into a `Vec` cannot fail, and the model holds only string keys.
    let _ = write_json(m, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Write the canonical JSON text of a module (pretty-printed, trailing newline) to `w`. Only
/// one instruction at a time becomes a `Value` (for its sorted keys); the module, function and
/// block objects are written key by key in the same sorted order, so the text is exactly the
/// pretty-printed [`to_json_value`] while the memory it takes beside the model is one
/// instruction's value.
pub fn write_json<W: std::io::Write>(m: &Module, mut w: W) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut w, &module_out(m)).map_err(std::io::Error::from)?;
    w.write_all(b"\n")
}

/// An object written from `head` (the object's other keys, already sorted) with the entry
/// `key` written from `inner` instead.
struct Shell<T: Serialize> {
    head: Value,
    key: &'static str,
    inner: T,
}

impl<T: Serialize> Serialize for Shell<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let empty = Map::new();
        let head = self.head.as_object().unwrap_or(&empty);
        let mut map = s.serialize_map(Some(head.len()))?;
        for (k, v) in head {
            if k == self.key {
                map.serialize_entry(k, &self.inner)?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// A sequence of items, each written through `f`.
struct Seq<'a, X, F>(&'a [X], F);

impl<'a, X, T: Serialize, F: Fn(&'a X) -> T> Serialize for Seq<'a, X, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|x| (self.1)(x)))
    }
}

/// The object `head` serializes to, with its entry `key` written from `inner`.
fn shell<T: Serialize>(head: impl Serialize, key: &'static str, inner: T) -> Shell<T> {
    Shell {
        head: serde_json::to_value(head).unwrap_or(Value::Null),
        key,
        inner,
    }
}

/// A module object, its functions written one instruction value at a time.
fn module_out(m: &Module) -> impl Serialize + '_ {
    let head = Module {
        name: m.name.clone(),
        arch: m.arch,
        functions: Vec::new(),
    };
    shell(head, "functions", Seq(&m.functions, function_out))
}

/// A function object.
fn function_out(f: &Function) -> impl Serialize + '_ {
    let head = Function {
        name: f.name.clone(),
        attrs: f.attrs.clone(),
        blocks: Vec::new(),
    };
    shell(head, "blocks", Seq(&f.blocks, block_out))
}

/// A block object, each instruction written as its own value (sorted keys).
fn block_out(b: &Block) -> impl Serialize + '_ {
    let head = Block {
        name: b.name.clone(),
        dynamic_cfg: b.dynamic_cfg,
        instructions: Vec::new(),
    };
    shell(head, "instructions", Seq(&b.instructions, instruction_out))
}

fn instruction_out(i: &Instruction) -> Value {
    serde_json::to_value(i).unwrap_or(Value::Null)
}

/// The JSON form of an [`Instruction`] as written: the class fields flattened beside the
/// common keys.
#[derive(Serialize)]
struct InstructionOut<'a> {
    op: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a String>,
    engine: &'static str,
    args: &'a [AccessPattern],
    outs: &'a [AccessPattern],
    #[serde(flatten)]
    matmult_mx: Option<&'a MatmultMxFields>,
    #[serde(flatten)]
    nki_kernel: Option<&'a NkiKernelFields>,
    #[serde(flatten)]
    collective: Option<&'a CollectiveFields>,
    #[serde(flatten)]
    sb2sb: Option<&'a Sb2SbFields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocks: Option<&'a [Block]>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    attrs: &'a Map<String, Value>,
}

impl Serialize for Instruction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        InstructionOut {
            op: self.class.name(),
            name: self.name.as_ref(),
            engine: self.engine.name(),
            args: &self.args,
            outs: &self.outs,
            matmult_mx: self.matmult_mx(),
            nki_kernel: self.nki_kernel(),
            collective: self.collective(),
            sb2sb: self.sb2sb(),
            blocks: match &self.fields {
                ClassFields::Region(b) => Some(b),
                _ => None,
            },
            attrs: &self.attrs,
        }
        .serialize(s)
    }
}
