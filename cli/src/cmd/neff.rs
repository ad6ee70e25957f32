//! `sim neff info|unpack|pack`: inspect, extract and build NEFF containers.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tpbsim_isa::text::{cross_check, AsmCheck};
use tpbsim_isa::Gen;
use tpbsim_neff::{
    header::hex, DigestStatus, Layout, Limits, LogicalCore, Neff, NeffError, ReadOptions, Subgraph,
    Target, Unmodelled,
};
use tpbsim_sim::machine::load;

use crate::exit::{CliError, Outcome};

/// Arguments of `sim neff`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Print the header, the members, and each subgraph's variables, queues and streams.
    #[command(after_help = crate::help::NEFF_INFO)]
    Info(InfoArgs),
    /// Extract every member into a directory.
    #[command(after_help = crate::help::NEFF_UNPACK)]
    Unpack(UnpackArgs),
    /// Build a NEFF from a directory, in the runtime's layout (with --keep-layout: every file
    /// as it is).
    ///
    /// Without --keep-layout only the members a manifest names are packed (the others are
    /// reported); a directory already in the runtime's layout keeps their paths, one in the
    /// by-name layout is rewritten (sgNN/def.json, one engine JSON per engine, lowercase
    /// streams). With --keep-layout (or --no-validate) every file becomes a member under its
    /// relative path.
    #[command(after_help = crate::help::NEFF_PACK)]
    Pack(PackArgs),
}

/// Options shared by the commands that read a NEFF.
#[derive(clap::Args, Clone)]
pub struct ReadArgs {
    /// Check the payload digest against the header's hash and refuse a mismatch (off by
    /// default, as in the Neuron runtime, whose NEURON_RT_VALIDATE_HASH defaults to false).
    #[arg(long)]
    verify_hash: bool,
    /// No effect: the digest is checked only with --verify-hash (kept so that existing command
    /// lines still parse).
    #[arg(long, hide = true, conflicts_with = "verify_hash")]
    no_verify_hash: bool,
    /// Largest total uncompressed size accepted, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    max_total_mib: u64,
    /// Largest single member accepted, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    max_member_mib: u64,
}

impl ReadArgs {
    /// The reader options these flags select.
    pub fn options(&self) -> ReadOptions {
        ReadOptions {
            verify_hash: self.verify_hash,
            limits: Limits {
                max_total_bytes: self.max_total_mib.saturating_mul(1 << 20),
                max_member_bytes: self.max_member_mib.saturating_mul(1 << 20),
                ..Limits::default()
            },
        }
    }
}

#[derive(clap::Args)]
struct InfoArgs {
    /// The NEFF file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Generation to assemble the `.asm` members for when the NEFF names none (`*`).
    #[arg(long)]
    arch: Option<Gen>,
    #[command(flatten)]
    read: ReadArgs,
}

#[derive(clap::Args)]
struct UnpackArgs {
    /// The NEFF file.
    file: PathBuf,
    /// Directory to extract into (created if absent).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Replace files that already exist.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    read: ReadArgs,
}

#[derive(clap::Args)]
struct PackArgs {
    /// Directory to pack (either layout).
    dir: PathBuf,
    /// The NEFF file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Model name for the header (default: the directory's name).
    #[arg(long)]
    name: Option<String>,
    /// 2 = gzip tar + MD5 (default), 1 = plain tar + SHA-256.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=2))]
    pkg_version: u64,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
    /// Skip checking each subgraph (def.json, streams, sidecars, constants) before writing;
    /// implies --keep-layout.
    #[arg(long)]
    no_validate: bool,
    /// Pack every file of the directory as it is, under its relative path (members no manifest
    /// names included), instead of writing the runtime's layout.
    #[arg(long)]
    keep_layout: bool,
}

/// Run `sim neff`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    match a.action {
        Action::Info(a) => info(a),
        Action::Unpack(a) => unpack(a),
        Action::Pack(a) => pack(a),
    }
}

fn read_neff(path: &Path, read: &ReadArgs) -> Result<Neff, CliError> {
    Neff::read(path, &read.options()).map_err(|e| located(path, e))
}

/// Prefix an error with the file unless it already names it.
fn located(path: &Path, e: NeffError) -> CliError {
    CliError::Io(error_text(path, &e))
}

/// A NEFF reader's error naming the file once: a file-system error names its path already.
pub(crate) fn error_text(path: &Path, e: &NeffError) -> String {
    match e {
        NeffError::Io { .. } => e.to_string(),
        other => format!("{}: {other}", path.display()),
    }
}

fn layout_name(l: Layout) -> &'static str {
    match l {
        Layout::Headered => "header + archive",
        Layout::BareGzip => "bare gzip tar (no header)",
        Layout::BareTar => "bare tar (no header)",
    }
}

fn header_json(n: &Neff) -> Value {
    let h = &n.header;
    let tpb_used = h
        .tpb_per_node
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |i| i + 1);
    json!({
        "pkg_version": h.pkg_version,
        "header_size": h.header_size,
        "data_size": h.data_size,
        "neff_version_major": h.neff_version_major,
        "neff_version_minor": h.neff_version_minor,
        "build_version": h.build_version_str(),
        "num_tpb": h.num_tpb,
        "hash_algorithm": h.digest_algorithm(),
        "hash": hex(h.digest()),
        "hash_status": n.digest.as_str(),
        "uuid": h.uuid_str(),
        "name": h.name_str(),
        "requested_tpb_count": h.requested_tpb_count,
        "tpb_per_node": &h.tpb_per_node[..tpb_used],
        "feature_bits": format!("{:#x}", h.feature_bits),
        "feature_names": h.feature_names(),
        "lnc_size": h.lnc_size,
        "runtime_compat_issues": h.runtime_compat_issues(),
    })
}

fn subgraph_json(sg: &Subgraph) -> Value {
    let vars: Vec<Value> = sg
        .def
        .var
        .iter()
        .map(|v| {
            json!({
                "var_id": v.var_id, "name": v.name, "type": v.kind.as_str(), "size": v.size,
                "dtype": v.dtype.map(|d| d.name()), "shape": v.shape, "file_name": v.file_name,
                "list": v.list, "backing_variable_off": v.backing_variable_off,
                "backing_buf": v.backing_buf.as_ref().map(ToString::to_string),
            })
        })
        .collect();
    let queues: Vec<Value> = sg
        .def
        .dma_queue
        .iter()
        .map(|q| {
            json!({
                "name": q.name, "id": q.id, "owner": q.owner, "type": q.role_type,
                "num_queues": q.num_queues, "semaphores": q.semaphores(),
                "dynamic_dma": q.dynamic_dma.as_ref().map(|d| json!({
                    "SB_scratch_partition_offset": d.sb_scratch_partition_offset,
                    "SB_scratch_partition_size": d.sb_scratch_partition_size,
                })),
                "fabric_path": q.fabric_path,
            })
        })
        .collect();
    let streams: Vec<Value> = sg
        .streams
        .iter()
        .map(|(e, s)| {
            let side = sg.sidecars.get(e);
            json!({
                "engine": e.short(), "member": s.member, "bundles": s.stream.len(), "bytes": s.stream.byte_len(),
                "sidecar": side.map(|c| &c.member),
                "dma_blocks": side.map(|c| c.sidecar.dma.len()),
                "dma_entries": side.map(|c| c.sidecar.entry_count()),
            })
        })
        .collect();
    let orphan_sidecars: Vec<&str> = sg
        .sidecars
        .iter()
        .filter(|(e, _)| !sg.streams.contains_key(e))
        .map(|(_, c)| c.member.as_str())
        .collect();
    json!({
        "dir": sg.dir, "def_json": sg.def_member, "variables": vars, "queues": queues, "streams": streams,
        "def_dma_blocks": sg.def.dma.len(), "sidecars_without_stream": orphan_sidecars,
        "neff_features": sg.def.neff_features,
        "fp8_conversion_config": sg.def.fp8_conversion_config,
        "runtime_semaphore_count": sg.def.runtime_semaphore_count,
        "runtime_event_count": sg.def.runtime_event_count,
    })
}

fn info(a: InfoArgs) -> Result<Outcome, CliError> {
    let n = read_neff(&a.file, &a.read)?;
    let neff_json = n.neff_json();
    let mut first_error: Option<String> = None;
    let mut note = |e: &NeffError| {
        if first_error.is_none() {
            first_error = Some(format!("{}: {e}", a.file.display()));
        }
    };
    if let Err(e) = &neff_json {
        note(e);
    }
    let plan = n.plan();
    if let Err(e) = &plan {
        note(e);
    }
    let target = match plan.as_ref().map(|p| &p.target) {
        Ok(Target::Named { name, source }) => Some(format!("{name} ({source})")),
        Ok(Target::Any { source }) => Some(format!("* ({source}: any generation; pass --arch)")),
        _ => None,
    };
    let target_arch = match plan.as_ref().map(|p| &p.target) {
        Ok(Target::Named { name, .. }) => Some(name.clone()),
        Ok(Target::Any { .. }) => Some("*".to_string()),
        _ => None,
    };
    let reader = plan.as_ref().ok().map(|p| p.reader.describe());
    let subgraphs: Vec<(String, Result<Subgraph, NeffError>)> = n
        .subgraph_dirs()
        .into_iter()
        .map(|d| (d.clone(), n.subgraph(&d)))
        .collect();
    for (_, r) in &subgraphs {
        if let Err(e) = r {
            note(e);
        }
    }
    let loaded: Vec<&Subgraph> = subgraphs
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .collect();
    let mut core: Option<Result<LogicalCore, String>> = None;
    let mut unmodelled: Vec<Unmodelled> = loaded
        .iter()
        .flat_map(|s| s.unmodelled.iter().cloned())
        .collect();
    if loaded.len() == subgraphs.len() {
        let owned: Vec<Subgraph> = n.subgraphs().unwrap_or_default();
        match n.unmodelled_members(&owned) {
            Ok(u) => unmodelled.extend(u),
            Err(e) => note(&e),
        }
        if let Err(e) = n.check_reachable(&owned) {
            note(&e);
        }
        let c = n.logical_core(&owned);
        if let Err(e) = &c {
            note(e);
        }
        core = Some(c.map_err(|e| e.to_string()));
    }
    let gen = a.arch.or_else(|| load::target_gen(&n).ok().flatten());
    let asm_rows = asm_cross_checks(&n, &loaded, gen);
    if a.json {
        let doc = json!({
            "asm_cross_check": asm_rows.iter().map(AsmRow::json).collect::<Vec<_>>(),
            "file": a.file.display().to_string(),
            "layout": layout_name(n.layout),
            "header": if n.layout == Layout::Headered { header_json(&n) } else { Value::Null },
            "target_arch": target_arch,
            "target": target,
            "reader": reader,
            "logical_core": match &core {
                Some(Ok(c)) => json!({"size": c.size, "vnc_feature": c.vnc_feature, "subgraphs": c.subgraphs}),
                Some(Err(e)) => json!({"error": e}),
                None => Value::Null,
            },
            "unmodelled": unmodelled.iter().map(|u| json!({
                "member": u.member, "path": u.path, "affects_results": u.affects_results, "note": u.note,
            })).collect::<Vec<_>>(),
            "members": n.members.iter().map(|(k, v)| json!({"name": k, "size": v.len()})).collect::<Vec<_>>(),
            "subgraphs": subgraphs.iter().map(|(d, r)| match r {
                Ok(sg) => subgraph_json(sg),
                Err(e) => json!({"dir": d, "error": e.to_string()}),
            }).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| CliError::Io(e.to_string()))?;
        println!("{text}");
    } else {
        print_text(&a.file, &n, target.as_deref(), &subgraphs);
        if let Some(r) = reader {
            println!("reader: {r}");
        }
        match &core {
            Some(Ok(c)) => println!(
                "logical core: {} physical core(s) (lnc_size), vnc feature {}, {} subgraph(s), one per physical core",
                c.size,
                if c.vnc_feature { "set" } else { "not set" },
                c.subgraphs
            ),
            Some(Err(e)) => println!("logical core: error: {e}"),
            None => {}
        }
        if unmodelled.is_empty() {
            println!("not modelled: nothing");
        } else {
            let affecting = unmodelled.iter().filter(|u| u.affects_results).count();
            println!(
                "not modelled: {} item(s), {affecting} that change results (sim run refuses those)",
                unmodelled.len()
            );
            for u in &unmodelled {
                println!("  {u}");
            }
        }
        if asm_rows.is_empty() {
            println!("asm cross-check: no stream has a .asm member beside it");
        } else {
            println!("asm cross-check (each stream against the .asm member beside it):");
            for r in &asm_rows {
                println!("  {} vs {}: {}", r.stream, r.asm, r.message());
            }
        }
    }
    match first_error {
        Some(e) => Err(CliError::Io(e)),
        None => Ok(Outcome::Ok),
    }
}

/// One stream cross-checked against the producer's `.asm` member beside it.
struct AsmRow {
    stream: String,
    asm: String,
    /// The comparison, or why it was not made.
    result: Result<AsmCheck, String>,
}

impl AsmRow {
    fn message(&self) -> String {
        match &self.result {
            Ok(c) => c.to_string(),
            Err(why) => format!("not checked: {why}"),
        }
    }

    fn json(&self) -> Value {
        let status = match &self.result {
            Ok(AsmCheck::Match(_)) => "match",
            Ok(AsmCheck::Differ { .. }) | Ok(AsmCheck::Count(..)) | Ok(AsmCheck::Longer(..)) => {
                "differ"
            }
            Ok(AsmCheck::Unparsed(..)) => "unparsed",
            Err(_) => "not-checked",
        };
        let mut v = json!({
            "stream": self.stream, "asm": self.asm, "status": status, "message": self.message(),
        });
        if let Ok(AsmCheck::Differ {
            index, byte, field, ..
        }) = &self.result
        {
            v["bundle"] = json!(index);
            v["byte"] = json!(byte);
            v["field"] = json!(field);
        }
        v
    }
}

/// Each stream member `X.bin` with an `X.asm` member beside it, assembled for `gen` and
/// compared bundle by bundle.
fn asm_cross_checks(n: &Neff, sgs: &[&Subgraph], gen: Option<Gen>) -> Vec<AsmRow> {
    let mut rows = Vec::new();
    for sg in sgs {
        for sm in sg.streams.values() {
            let stem = sm.member.strip_suffix(".bin").unwrap_or(&sm.member);
            let asm = format!("{stem}.asm");
            let Some(data) = n.members.get(&asm) else {
                continue;
            };
            let result = match (std::str::from_utf8(data), gen) {
                (Err(e), _) => Err(format!("the member is not UTF-8 text ({e})")),
                (Ok(_), None) => {
                    Err("the NEFF names no single generation; pass --arch".to_string())
                }
                (Ok(text), Some(g)) => Ok(cross_check(sm.stream.bundles(), text, g)),
            };
            rows.push(AsmRow {
                stream: sm.member.clone(),
                asm,
                result,
            });
        }
    }
    rows
}

fn print_text(
    file: &Path,
    n: &Neff,
    target: Option<&str>,
    subgraphs: &[(String, Result<Subgraph, NeffError>)],
) {
    println!("{}: {}", file.display(), layout_name(n.layout));
    if n.layout == Layout::Headered {
        let h = &n.header;
        println!("header:");
        println!("  pkg_version          {}", h.pkg_version);
        println!("  header_size          {}", h.header_size);
        println!("  data_size            {}", h.data_size);
        println!(
            "  neff_version         {}.{}",
            h.neff_version_major, h.neff_version_minor
        );
        println!("  build_version        {:?}", h.build_version_str());
        println!("  num_tpb              {}", h.num_tpb);
        println!(
            "  hash                 {} ({}, {})",
            hex(h.digest()),
            h.digest_algorithm().unwrap_or("?"),
            match &n.digest {
                DigestStatus::NotChecked => "not checked; --verify-hash checks it",
                other => other.as_str(),
            }
        );
        println!("  uuid                 {}", h.uuid_str());
        println!("  name                 {:?}", h.name_str());
        println!("  requested_tpb_count  {}", h.requested_tpb_count);
        let used = h
            .tpb_per_node
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |i| i + 1);
        println!("  tpb_per_node         {:?}", &h.tpb_per_node[..used]);
        let names = h.feature_names();
        if names.is_empty() {
            println!("  feature_bits         {:#x}", h.feature_bits);
        } else {
            println!(
                "  feature_bits         {:#x} ({})",
                h.feature_bits,
                names.join(", ")
            );
        }
        println!("  lnc_size             {}", h.lnc_size);
        for issue in h.runtime_compat_issues() {
            println!("  note: the Neuron runtime would refuse this header: {issue}");
        }
    }
    if let Some(t) = target {
        println!("target: {t}");
    }
    let total: usize = n.members.values().map(Vec::len).sum();
    println!("members: {} ({total} bytes)", n.members.len());
    for (name, data) in &n.members {
        println!("  {:>12}  {name}", data.len());
    }
    for (dir, r) in subgraphs {
        let shown = if dir.is_empty() { "." } else { dir.as_str() };
        let sg = match r {
            Ok(sg) => sg,
            Err(e) => {
                println!("subgraph {shown}: error: {e}");
                continue;
            }
        };
        println!("subgraph {shown}:");
        if !sg.def.neff_features.is_empty() {
            println!("  neff_features: {}", sg.def.neff_features.join(", "));
        }
        if let Some(c) = &sg.def.fp8_conversion_config {
            let show = |v: Option<String>| v.unwrap_or_else(|| "-".into());
            println!(
                "  fp8_conversion_config: emax_fp8_e4m3 {}, emax_fp8_e5m2 {}, fp8_range_extension {}, fp8_sis {}, fp8_sns {}, ocp_sat {}",
                show(c.emax_fp8_e4m3.map(|v| v.to_string())),
                show(c.emax_fp8_e5m2.map(|v| v.to_string())),
                show(c.fp8_range_extension.map(|v| v.to_string())),
                show(c.fp8_sis.map(|v| v.to_string())),
                show(c.fp8_sns.map(|v| v.to_string())),
                show(c.ocp_sat.map(|v| v.to_string())),
            );
        }
        println!("  variables: {}", sg.def.var.len());
        for v in &sg.def.var {
            let mut line = format!(
                "    {:>4}  {:<24} {:<12}",
                v.var_id,
                v.name,
                v.kind.as_str()
            );
            if let Some(s) = v.size {
                line.push_str(&format!(" size {s}"));
            }
            if let Some(d) = v.dtype {
                line.push_str(&format!(" {d}"));
            }
            if let Some(s) = &v.shape {
                line.push_str(&format!(" {s:?}"));
            }
            if let Some(f) = &v.file_name {
                line.push_str(&format!(" <- {f}"));
            }
            if let Some(l) = &v.list {
                line.push_str(&format!(" list {l:?}"));
            }
            if let Some(o) = v.backing_variable_off {
                line.push_str(&format!(" backing_variable_off {o}"));
            }
            if let Some(b) = &v.backing_buf {
                line.push_str(&format!(" backing_buf {b}"));
            }
            println!("{line}");
        }
        println!("  dma queues: {}", sg.def.dma_queue.len());
        for q in &sg.def.dma_queue {
            let id = q.id.map_or(String::new(), |i| format!(" id {i}"));
            let owner = q
                .owner
                .as_deref()
                .map_or(String::new(), |o| format!(" owner {o}"));
            let kind = q
                .role_type
                .as_deref()
                .map_or(String::new(), |t| format!(" type {t}"));
            let count = q
                .num_queues
                .map_or(String::new(), |n| format!(" num_queues {n}"));
            let scratch = q.dynamic_dma.as_ref().map_or(String::new(), |d| {
                format!(
                    " SB scratch {}+{} per partition",
                    d.sb_scratch_partition_offset.unwrap_or(0),
                    d.sb_scratch_partition_size.unwrap_or(0)
                )
            });
            println!(
                "    {}{id}{owner}{kind}{count} semaphores {:?}{scratch}",
                q.name,
                q.semaphores()
            );
        }
        println!("  streams: {}", sg.streams.len());
        for (e, s) in &sg.streams {
            let side = sg.sidecars.get(e).map_or("no sidecar".to_string(), |c| {
                format!(
                    "{} ({} blocks, {} entries)",
                    c.member,
                    c.sidecar.dma.len(),
                    c.sidecar.entry_count()
                )
            });
            println!(
                "    {:<4} {:>8} bundles  {}  dma: {side}",
                e.short(),
                s.stream.len(),
                s.member
            );
        }
        for (e, c) in sg
            .sidecars
            .iter()
            .filter(|(e, _)| !sg.streams.contains_key(e))
        {
            println!("    {:<4} sidecar {} without a stream", e.short(), c.member);
        }
    }
}

fn unpack(a: UnpackArgs) -> Result<Outcome, CliError> {
    let n = read_neff(&a.file, &a.read)?;
    n.unpack(&a.output, a.force)
        .map_err(|e| located(&a.file, e))?;
    println!(
        "{} members extracted to {}",
        n.members.len(),
        a.output.display()
    );
    Ok(Outcome::Ok)
}

fn pack(a: PackArgs) -> Result<Outcome, CliError> {
    if !a.dir.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: not a directory",
            a.dir.display()
        )));
    }
    if !a.force && a.output.exists() {
        return Err(CliError::Io(format!(
            "{}: exists (use --force to overwrite)",
            a.output.display()
        )));
    }
    let name = match a.name {
        Some(n) => n,
        None => {
            let canon = a.dir.canonicalize().unwrap_or_else(|_| a.dir.clone());
            canon
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }
    };
    let mut n =
        Neff::from_dir(&a.dir, &name, &Limits::default()).map_err(|e| located(&a.dir, e))?;
    n.header.pkg_version = a.pkg_version;
    if !a.no_validate {
        let sgs = n.subgraphs().map_err(|e| located(&a.dir, e))?;
        n.check_reachable(&sgs).map_err(|e| located(&a.dir, e))?;
        if !a.keep_layout {
            // Only what the manifests name is packed, in the runtime's layout.
            let r = tpbsim_neff::to_runtime_layout(&n).map_err(|e| located(&a.dir, e))?;
            for m in &r.ignored {
                eprintln!(
                    "sim: warning: {}: `{m}` is not packed: no def.json, engine JSON or variable names it",
                    a.dir.display()
                );
            }
            n = r.neff;
            n.subgraphs().map_err(|e| located(&a.dir, e))?;
        }
    }
    n.write_to(&a.output).map_err(|e| located(&a.output, e))?;
    println!(
        "{}: {} members, pkg_version {}",
        a.output.display(),
        n.members.len(),
        a.pkg_version
    );
    Ok(Outcome::Ok)
}

/// The generation to use for a NEFF: `--arch` when given (it overrides), else the NEFF's own
/// (the kelf `target`, or `neff.json` `target_arch`). A NEFF that says `*` or nothing needs
/// `--arch`.
pub fn generation(n: &Neff, arch: Option<Gen>, name: &str) -> Result<Gen, CliError> {
    if let Some(g) = arch {
        return Ok(g);
    }
    let own = load::target_gen(n).map_err(|e| CliError::Usage(format!("{name}: {e}")))?;
    own.ok_or_else(|| {
        CliError::Usage(format!(
            "{name}: the NEFF names {}; pass --arch v2|v3|v4|v5",
            load::target_source(n)
        ))
    })
}

/// Every subgraph of a NEFF, with the checks that something was reachable, that nothing
/// stream-like was left aside, and that the number of subgraphs suits the logical core.
pub fn checked_subgraphs(n: &Neff, name: &str) -> Result<Vec<Subgraph>, CliError> {
    let usage = |e: NeffError| CliError::Usage(format!("{name}: {e}"));
    let sgs = n.subgraphs().map_err(usage)?;
    n.check_reachable(&sgs).map_err(usage)?;
    n.logical_core(&sgs).map_err(usage)?;
    Ok(sgs)
}
