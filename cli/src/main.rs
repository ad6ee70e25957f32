//! `sim`: decode, validate, verify and run NeuronCore engine streams.

mod cmd;
mod exit;
mod help;
#[cfg(feature = "mpi")]
mod mpi;

use clap::{Parser, Subcommand};
use exit::CliError;

#[derive(Parser)]
#[command(
    name = "sim",
    version,
    about = "Bit-accurate NeuronCore engine stream toolkit",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the generations tpbsim knows and their geometry.
    #[command(after_help = help::INFO)]
    Info(cmd::info::Args),
    /// Disassemble an engine stream into the text form, one line per bundle.
    #[command(after_help = help::DISASM)]
    Disasm(cmd::disasm::Args),
    /// Assemble the text form back into an engine stream.
    #[command(after_help = help::ASM)]
    Asm(cmd::asm::Args),
    /// Decode an engine stream (JSON Lines with --json).
    #[command(after_help = help::DECODE)]
    Decode(cmd::decode::Args),
    /// Inspect, unpack and pack NEFF containers.
    #[command(after_help = help::NEFF)]
    Neff(cmd::neff::Args),
    /// Lift engine streams (.bin, .neff) to BIR JSON.
    #[command(after_help = help::LIFT)]
    Lift(cmd::lift::Args),
    /// Verify a BIR module with the L1 rules (birverifier); engine streams and NEFFs are lifted
    /// and checked with both L1 and L2.
    #[command(after_help = help::VERIFY)]
    Verify(cmd::verify::Args),
    /// Run a kernel NEFF on the machine model, write its outputs and compare them with references.
    #[command(after_help = help::RUN)]
    Run(cmd::run::Args),
    /// Check a kernel for synchronisation bugs: cross-engine races, uninitialised reads, PSUM
    /// accumulation onto unzeroed banks, deadlocks (with the wait-for graph).
    #[command(after_help = help::CHECK)]
    Check(cmd::check::Args),
    /// Profile a kernel on the timeline cost model: per-engine busy/idle/wait time and the
    /// critical path.
    #[command(after_help = help::PROFILE)]
    Profile(cmd::profile::Args),
    /// Check engine streams with the L2 wire validator (silicon legality per generation).
    #[command(after_help = help::VALIDATE)]
    Validate(cmd::validate::Args),
    /// Cast bit patterns (hex, one per line on stdin) or one value between number formats.
    #[command(after_help = help::CONVERT)]
    Convert(cmd::convert::Args),
    /// Fuzz a generation's formats through decode, L2, lift and L1 and report where the
    /// layers disagree.
    #[command(after_help = help::FUZZ)]
    Fuzz(cmd::fuzz::Args),
}

fn run(cli: Cli) -> Result<exit::Outcome, CliError> {
    match cli.command {
        Command::Info(a) => cmd::info::run(a),
        Command::Disasm(a) => cmd::disasm::run(a),
        Command::Asm(a) => cmd::asm::run(a),
        Command::Decode(a) => cmd::decode::run(a),
        Command::Neff(a) => cmd::neff::run(a),
        Command::Lift(a) => cmd::lift::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Profile(a) => cmd::profile::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Convert(a) => cmd::convert::run(a),
        Command::Fuzz(a) => cmd::fuzz::run(a),
    }
}

fn main() -> std::process::ExitCode {
    tpbsim_sim::process::retain_freed_memory();
    tpbsim_isa::fsio::install_signal_cleanup();
    if let Err(e) = tpbsim_sim::numerics::simd::cap_from_env() {
        eprintln!("error: {e}");
        return std::process::ExitCode::from(exit::USAGE);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return std::process::ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(outcome) => std::process::ExitCode::from(outcome.code()),
        Err(e) => {
            if !matches!(e, CliError::Reported(_)) {
                eprintln!("sim: error: {e}");
            }
            std::process::ExitCode::from(e.exit_code())
        }
    }
}
