//! The JSON form of a bundle (`sim decode --json`).

use super::*;

pub(crate) fn enum_json(map: &mut Map<String, Value>, key: &str, raw: u8, def: &EnumDef) {
    map.insert(key.to_string(), json!(raw));
    map.insert(
        format!("{key}_name"),
        def.value(raw).map_or(Value::Null, |v| json!(v.name)),
    );
}

pub(crate) fn addr4_json(a: Addr4, gen: Gen) -> Value {
    let mut m = Map::new();
    m.insert("raw".into(), json!(a.0));
    m.insert("address".into(), json!(a.address()));
    enum_json(
        &mut m,
        "marker",
        a.marker().0,
        spec::enum_def("ADDR4_MARKER").expect("ADDR4_MARKER"),
    );
    if let Some(r) = a.register_id() {
        m.insert("register".into(), json!(r));
    } else {
        let psum = a.is_psum(gen);
        let (p, off) = a.split(gen);
        m.insert("region".into(), json!(if psum { "psum" } else { "sbuf" }));
        m.insert("partition".into(), json!(p));
        m.insert("offset".into(), json!(off));
    }
    Value::Object(m)
}

pub(crate) fn pattern_json(p: &PatternValue, gen: Gen) -> Value {
    let n = p.dims as usize;
    json!({ "addr": addr4_json(p.addr, gen), "step": &p.step[..n], "num": &p.num[..n] })
}

/// JSON value of one field (enums are written by the caller as value + `_name`).
pub(crate) fn value_json(v: &FieldValue<'_>, gen: Gen) -> Value {
    match *v {
        FieldValue::Unsigned(x) => json!(x),
        FieldValue::Signed(x) => json!(x),
        FieldValue::F32(x) => {
            let f = x.to_f32();
            if f.is_finite() {
                json!(f)
            } else {
                Value::Null
            }
        }
        FieldValue::Enum { raw, .. } => json!(raw),
        FieldValue::DtypePair(p) => {
            let dt = spec::enum_def("DTYPE").expect("DTYPE");
            let mut m = Map::new();
            m.insert("raw".into(), json!(p.0));
            enum_json(&mut m, "lo", p.lo().0, dt);
            enum_json(&mut m, "hi", p.hi().0, dt);
            Value::Object(m)
        }
        FieldValue::Bits { raw, def } => {
            let mut m = Map::new();
            m.insert("raw".into(), json!(raw));
            for d in def.bits {
                let mask = (((1u16 << d.width) - 1) as u8) << d.lsb;
                m.insert(d.name.into(), json!((raw & mask) >> d.lsb));
            }
            Value::Object(m)
        }
        FieldValue::Addr4(a) => addr4_json(a, gen),
        FieldValue::Pattern(p) => pattern_json(&p, gen),
        FieldValue::MxMem(x) => json!({
            "data": addr4_json(x.data, gen), "scale": addr4_json(x.scale, gen), "k": x.k,
            "step_sign": x.step_sign, "scale_partition": x.scale_partition,
        }),
        FieldValue::MxIndirect(x) => json!({
            "indices": addr4_json(x.indices, gen), "data": addr4_json(x.data, gen), "scale": addr4_json(x.scale, gen),
            "k": x.k, "byte_0e": x.byte_0e, "scale_partition": x.scale_partition,
        }),
        FieldValue::Addr8(a) => {
            let mut m = Map::new();
            m.insert("raw".into(), json!(a.0));
            m.insert("value".into(), json!(a.value()));
            m.insert("marker_byte".into(), json!(a.marker_byte()));
            enum_json(
                &mut m,
                "header_marker",
                a.header_marker().0,
                spec::enum_def("ADDR8_MARKER").expect("ADDR8_MARKER"),
            );
            enum_json(
                &mut m,
                "pseudo_marker",
                a.pseudo_marker().0,
                spec::enum_def("ADDR8_PSEUDO_MARKER").expect("ADDR8_PSEUDO_MARKER"),
            );
            Value::Object(m)
        }
        FieldValue::EventsExt(e) => {
            let mut m = Map::new();
            enum_json(
                &mut m,
                "wait_mode",
                e.wait_mode.0,
                spec::enum_def("WAIT_MODE").expect("WAIT_MODE"),
            );
            m.insert("wait_idx".into(), json!(e.wait_idx));
            enum_json(
                &mut m,
                "update_mode",
                e.update_mode.0,
                spec::enum_def("UPDATE_MODE").expect("UPDATE_MODE"),
            );
            m.insert("update_idx".into(), json!(e.update_idx));
            m.insert("sem_wait_value".into(), json!(e.sem_wait_value));
            m.insert("sem_update_value".into(), json!(e.sem_update_value));
            Value::Object(m)
        }
        FieldValue::Array { vals, len } => json!(&vals[..len as usize]),
        FieldValue::Str(s) => {
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            json!(String::from_utf8_lossy(&s[..end]))
        }
        FieldValue::Opaque(s) => json!(hex(s)),
    }
}

/// The JSON object of one bundle: `{"index","offset","opcode","mnemonic","format","fields",
/// "reserved_nonzero"}`; an undecodable bundle gives `{"index","offset","opcode","error","hex"}`.
pub fn bundle_json(index: usize, b: &Bundle, gen: Gen) -> Value {
    let mut top = Map::new();
    top.insert("index".into(), json!(index));
    top.insert("offset".into(), json!(index * 64));
    top.insert("opcode".into(), json!(b.0[0]));
    let inst = match decode(b, gen) {
        Ok(i) => i,
        Err(e) => {
            top.insert(
                "mnemonic".into(),
                Opcode(b.0[0]).mnemonic().map_or(Value::Null, |m| json!(m)),
            );
            top.insert("error".into(), json!(e.to_string()));
            top.insert("hex".into(), json!(b.to_hex()));
            return Value::Object(top);
        }
    };
    top.insert("mnemonic".into(), json!(inst.mnemonic()));
    top.insert("format".into(), json!(inst.format_name()));
    let mut fields = Map::new();
    inst.visit_fields(|m, v| {
        if let FieldValue::Enum { raw, def } = v {
            enum_json(&mut fields, m.name, raw, def);
        } else {
            if let FieldValue::F32(x) = v {
                fields.insert(format!("{}_bits", m.name), json!(x.0));
            }
            fields.insert(m.name.into(), value_json(&v, gen));
        }
    });
    top.insert("fields".into(), Value::Object(fields));
    let res: Vec<Value> = inst
        .nonzero_reserved()
        .into_iter()
        .map(|r| json!({ "offset": r.start, "len": r.len(), "hex": hex(&b.0[r]) }))
        .collect();
    top.insert("reserved_nonzero".into(), Value::Array(res));
    Value::Object(top)
}
