//! BIR JSON export: the model serialized to a value (keys sorted) and pretty-printed, each
//! instruction with its class fields flattened beside the common keys.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::super::model::{
    AccessPattern, Block, ClassFields, CollectiveFields, Instruction, MatmultMxFields, Module,
    NkiKernelFields, Sb2SbFields,
};

/// The canonical JSON value of a module.
pub fn to_json_value(m: &Module) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

/// The canonical JSON text of a module (pretty-printed, trailing newline).
pub fn to_json_string(m: &Module) -> String {
    let mut s = serde_json::to_string_pretty(&to_json_value(m)).unwrap_or_default();
    s.push('\n');
    s
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
