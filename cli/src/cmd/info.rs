//! `sim info`: the generations, engines and per-generation geometry tpbsim knows.

use crate::exit::{CliError, Outcome};
use std::fmt::Write as _;
use tpbsim_isa::spec::geometry_rows;
use tpbsim_isa::{Engine, Gen};

/// Arguments of `sim info`.
#[derive(clap::Args)]
pub struct Args {}

/// Run `sim info`.
pub fn run(_a: Args) -> Result<Outcome, CliError> {
    print!("{}", text());
    Ok(Outcome::Ok)
}

/// A geometry value as `docs/isa.md` writes it: addresses and sizes from 64 KiB up in hex.
fn value(x: u64) -> String {
    if x >= 0x10000 {
        format!("{x:#x}")
    } else {
        x.to_string()
    }
}

/// The whole report: generations, engines, then one line per geometry row of the spec with its
/// value in every generation and its unit.
fn text() -> String {
    let mut o = String::from("generations:\n");
    for g in Gen::ALL {
        let _ = writeln!(
            o,
            "  {:<3} {:<9} arch level {}",
            g.short(),
            g.codename(),
            g.arch_level()
        );
    }
    o.push_str("engines:\n");
    for e in Engine::ALL {
        let _ = writeln!(
            o,
            "  {:<4} wire id {} stream {}",
            e.short(),
            e.wire_id(),
            e.stream_file_name()
        );
    }
    let rows = geometry_rows();
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| Gen::ALL.iter().map(|g| value(r.v[g.index()])).collect())
        .collect();
    let val_w = cells
        .iter()
        .flatten()
        .map(String::len)
        .chain(Gen::ALL.iter().map(|g| g.short().len()))
        .max()
        .unwrap_or(0);
    let _ = write!(o, "geometry:\n  {:<name_w$}", "");
    for g in Gen::ALL {
        let _ = write!(o, " {:>val_w$}", g.short());
    }
    o.push('\n');
    for (r, vals) in rows.iter().zip(&cells) {
        let _ = write!(o, "  {:<name_w$}", r.name);
        for v in vals {
            let _ = write!(o, " {v:>val_w$}");
        }
        let _ = writeln!(o, "  {}", r.unit);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_every_geometry_row_with_each_generations_value() {
        let t = text();
        let geo = t.split("geometry:\n").nth(1).expect("geometry section");
        let mut lines = geo.lines();
        let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(head, ["v2", "v3", "v4", "v5"]);
        let rows = geometry_rows();
        assert!(!rows.is_empty());
        for (r, line) in rows.iter().zip(lines) {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[0], r.name, "{line}");
            for (i, g) in Gen::ALL.iter().enumerate() {
                assert_eq!(words[1 + i], value(r.v[g.index()]), "{line}");
            }
        }
        assert_eq!(geo.lines().count(), rows.len() + 1);
        // One known value, read independently of the table: v5's PE array is 256 columns wide.
        let pe_cols = geo
            .lines()
            .find(|l| l.trim_start().starts_with("pe_cols "))
            .unwrap();
        assert_eq!(pe_cols.split_whitespace().nth(4), Some("256"), "{pe_cols}");
    }
}
