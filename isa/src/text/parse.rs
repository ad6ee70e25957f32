//! Parsing a line (either syntax) into a bundle.

use super::*;

/// One `name=value` item of a line, with the column of its first character. Items that the
/// dialect forms expand to (`$S[3]>=1` → `wait_mode`, `wait_idx`, `semaphore_value`) carry
/// the column of the token they came from.
pub(crate) struct Item {
    pub(crate) key: String,
    pub(crate) value: String,
    pub(crate) col: usize,
    /// Where the item came from when it was not written as `name=value` (for messages).
    pub(crate) from: Option<String>,
}

impl Item {
    /// The column an error in the value points at: the value's own column for `name=value`,
    /// the column of the token that wrote it otherwise (its key is not what was written).
    fn value_col(&self) -> usize {
        if self.from.is_some() {
            self.col
        } else {
            self.col + self.key.len() + 1
        }
    }
}

/// The opcode row a mnemonic names: exactly (any case), else uniquely when underscores are
/// ignored (`PSEUDO_DMA_TRIGGER` for `PSEUDO_DMATRIGGER`).
pub(crate) fn mnemonic_row(m: &str) -> Option<&'static spec::OpcodeRow> {
    if let Some(r) = spec::opcode_by_mnemonic(m) {
        return Some(r);
    }
    let squash = |s: &str| s.replace('_', "").to_ascii_uppercase();
    let want = squash(m);
    let mut found = spec::opcodes()
        .iter()
        .filter(|r| squash(r.mnemonic()) == want);
    match (found.next(), found.next()) {
        (Some(r), None) => Some(r),
        _ => None,
    }
}

/// Parse one line of the text form (either syntax; `docs/asm.md`). `Ok(None)` for a blank or
/// comment-only line.
pub fn parse_line(line: &str, gen: Gen) -> Result<Option<Bundle>, ParseError> {
    let toks = tokenize(line)?;
    let mut it = toks.iter().peekable();
    // Optional `INDEX 0xOFFSET:` prefix.
    if toks.len() >= 2
        && toks[0].text.bytes().all(|c| c.is_ascii_digit())
        && toks[1].text.ends_with(':')
    {
        it.next();
        it.next();
    }
    let Some(first) = it.next() else {
        return Ok(None);
    };
    if first.text == ".bundle" {
        let h = it
            .next()
            .ok_or_else(|| perr(first.col, ".bundle needs 128 hex digits"))?;
        if let Some(extra) = it.next() {
            return Err(perr(extra.col, "unexpected text after .bundle"));
        }
        return Bundle::from_hex(h.text)
            .map(Some)
            .ok_or_else(|| perr(h.col, "expected 128 hex digits"));
    }
    let row = mnemonic_row(first.text)
        .ok_or_else(|| perr(first.col, format!("unknown mnemonic `{}`", first.text)))?;
    if !row.is_present(gen) {
        return Err(perr(
            first.col,
            format!("{} ({:#04x}) is absent on {gen}", row.mnemonic(), row.code),
        ));
    }
    let rest: Vec<&Tok<'_>> = it.collect();
    let mut items: Vec<Item> = Vec::new();
    let mut positional: Vec<&Tok<'_>> = Vec::new();
    let mut sync = neuron::Sync::default();
    let mut i = 0;
    while i < rest.len() {
        let t = rest[i];
        if neuron::is_sync_token(t.text) {
            // The profile form names the semaphore after a space: `S[5] (Tensor)++@complete`.
            let mut text = t.text.to_string();
            if text.ends_with(']') {
                if let Some(n) = rest.get(i + 1).filter(|n| n.text.starts_with('(')) {
                    text.push_str(n.text);
                    i += 1;
                }
            }
            sync.add(&text, t.col)
                .map_err(|e| perr(t.col, e.to_string()))?;
        } else if let Some((k, v)) = t.text.split_once('=') {
            if k.is_empty() {
                return Err(perr(
                    t.col,
                    format!("expected name=value, got `{}`", t.text),
                ));
            }
            if let Some(field) = neuron::field_alias(k) {
                // The profile's name of a spec field (`acc_flags=3`).
                items.push(Item {
                    key: field.into(),
                    value: v.into(),
                    col: t.col,
                    from: Some(t.text.into()),
                });
            } else if let Some(code) = (k == "row_grp")
                .then(|| neuron::row_group_value(v))
                .flatten()
            {
                items.push(Item {
                    key: k.into(),
                    value: code.to_string(),
                    col: t.col,
                    from: Some(t.text.into()),
                });
            } else {
                neuron::split_operand_dtype(k, v, t.col, &mut items).map_err(|m| perr(t.col, m))?;
            }
        } else if neuron::is_size_term(t.text) {
            // The profile's trailing `N*M` term: accepted, not encoded (docs/asm.md).
        } else {
            positional.push(t);
        }
        i += 1;
    }
    sync.items(&mut items).map_err(|(col, m)| perr(col, m))?;
    let at = |items: &[Item], e: ItemErr| {
        let it = &items[e.item];
        perr(if e.at_value { it.value_col() } else { it.col }, e.message)
    };
    let meta = select_layout(row, &enc_items(&items), gen).map_err(|e| at(&items, e))?;
    // A bare word is the value of the format's one string field (`PSEUDO_DMA_TRIGGER q_in`).
    for t in positional {
        let m = meta
            .fields
            .iter()
            .find(|m| matches!(m.ty, FieldType::Str(_)))
            .filter(|_| !t.text.starts_with('"') || t.text.len() >= 2)
            .ok_or_else(|| {
                perr(
                    t.col,
                    format!(
                        "`{}` is not name=value (and {} has no string field a bare word could fill)",
                        t.text, meta.rust_name
                    ),
                )
            })?;
        let value = if t.text.starts_with('"') {
            t.text.to_string()
        } else {
            format!("\"{}\"", t.text)
        };
        items.push(Item {
            key: m.name.to_string(),
            value,
            col: t.col,
            from: Some(t.text.to_string()),
        });
    }
    encode_items(row, meta, &enc_items(&items), gen)
        .map(Some)
        .map_err(|e| at(&items, e))
}

/// The text items as items of the encoding stage.
fn enc_items(items: &[Item]) -> Vec<EncItem<'_>> {
    items
        .iter()
        .map(|it| EncItem {
            key: &it.key,
            val: Val::Text(&it.value),
            from: it.from.as_deref(),
        })
        .collect()
}

/// A field value at the encoding stage: the text of a parsed line, or a typed value.
#[derive(Clone, Copy)]
pub(crate) enum Val<'a> {
    Text(&'a str),
    Arg(&'a FieldArg),
}

/// One `name=value` of an instruction at the encoding stage (what [`parse_line`] reads a
/// line into, and what [`encode_fields`] is given).
pub(crate) struct EncItem<'a> {
    pub(crate) key: &'a str,
    pub(crate) val: Val<'a>,
    /// The token that wrote it when it was not written as `name=value` (for messages).
    pub(crate) from: Option<&'a str>,
}

/// An item that does not encode: its index, whether the error is in its value (else in its
/// name), and why.
pub(crate) struct ItemErr {
    pub(crate) item: usize,
    pub(crate) at_value: bool,
    pub(crate) message: String,
}

/// The bundle with only the opcode and the word length.
fn base_bundle(row: &spec::OpcodeRow) -> Bundle {
    let mut b = Bundle::ZERO;
    b.0[0] = row.code;
    b.0[1] = INST_WORD_LEN;
    b
}

fn layout_of(b: &Bundle, gen: Gen) -> &'static LayoutMeta {
    decode(b, gen)
        .map(|i| i.meta())
        .unwrap_or(&crate::formats::RAW_META)
}

/// Write one item's value (text read by the field's type, or typed) into field `m`.
fn write_val(m: &FieldMeta, i: usize, it: &EncItem<'_>, b: &mut Bundle) -> Result<(), ItemErr> {
    let r = match it.val {
        Val::Text(s) => parse_value(m, s).and_then(|a| write_arg(m, &a, b)),
        Val::Arg(a) => write_arg(m, a, b),
    };
    r.map_err(|e| ItemErr {
        item: i,
        at_value: true,
        message: format!("{}: {e}", it.key),
    })
}

/// The layout an instruction's fields select: the fields of the layout the bare opcode selects
/// are written first, then the layout of that bundle is the one (sub-opcode formats).
pub(crate) fn select_layout(
    row: &spec::OpcodeRow,
    items: &[EncItem<'_>],
    gen: Gen,
) -> Result<&'static LayoutMeta, ItemErr> {
    let mut b = base_bundle(row);
    let meta1 = layout_of(&b, gen);
    for (i, it) in items.iter().enumerate() {
        if let Some(m) = meta1.field(it.key) {
            if m.name != "opcode" {
                write_val(m, i, it, &mut b)?;
            }
        }
    }
    Ok(layout_of(&b, gen))
}

/// Encode the items into layout `meta` of opcode `row`: each a field of the layout (or
/// `reserved@OFFSET` with bytes for reserved bytes), none twice; fields not given are zero.
pub(crate) fn encode_items(
    row: &spec::OpcodeRow,
    meta: &'static LayoutMeta,
    items: &[EncItem<'_>],
    gen: Gen,
) -> Result<Bundle, ItemErr> {
    let mut b = base_bundle(row);
    let mut reserved: Vec<(usize, Vec<u8>, usize)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        let k = it.key;
        let name_err = |message: String| ItemErr {
            item: i,
            at_value: false,
            message,
        };
        if let Some(off) = k.strip_prefix("reserved@") {
            let off: usize = off
                .parse()
                .map_err(|_| name_err(format!("bad reserved offset `{off}`")))?;
            let bytes = match it.val {
                Val::Text(v) => parse_hex(v, v.len() / 2),
                Val::Arg(FieldArg::Bytes(v)) => Ok(v.clone()),
                Val::Arg(a) => Err(format!("{k}: expected bytes, got {}", a.kind())),
            }
            .map_err(|message| ItemErr {
                item: i,
                at_value: true,
                message,
            })?;
            reserved.push((off, bytes, i));
            continue;
        }
        if seen.contains(&k) {
            let how = it
                .from
                .map(|f| format!(" (also set by `{f}`)"))
                .unwrap_or_default();
            return Err(name_err(format!("field `{k}` given twice{how}")));
        }
        seen.push(k);
        let m = meta
            .field(k)
            .filter(|m| m.name != "opcode")
            .ok_or_else(|| {
                let how = it
                    .from
                    .map(|f| format!(" (`{f}` writes `{k}`; write the fields by name instead)"))
                    .unwrap_or_default();
                name_err(format!(
                    "{} has no field `{k}` on {gen}{how}",
                    meta.rust_name
                ))
            })?;
        write_val(m, i, it, &mut b)?;
    }
    for (off, bytes, i) in reserved {
        for (j, &x) in bytes.iter().enumerate() {
            let at = off + j;
            if !meta
                .reserved
                .iter()
                .any(|&(s, e)| (s as usize..e as usize).contains(&at))
            {
                return Err(ItemErr {
                    item: i,
                    at_value: false,
                    message: format!("byte {at} is not reserved in {}", meta.rust_name),
                });
            }
            b.0[at] = x;
        }
    }
    Ok(b)
}

/// Parse a whole text file; errors carry the 1-based line number.
pub fn parse_text(text: &str, gen: Gen) -> Result<Vec<Bundle>, (usize, ParseError)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(b) = parse_line(line, gen).map_err(|e| (i + 1, e))? {
            out.push(b);
        }
    }
    Ok(out)
}
