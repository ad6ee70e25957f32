//! The options `sim validate`, `sim verify` and `sim lift` share: the generation, the engine of
//! a `.bin` stream and the NEFF reader's options ([`StreamArgs`]), and the report options of
//! the two checkers ([`ReportArgs`]). Each command flattens them into its own arguments, so
//! they parse and document them the same way.

use tpbsim_isa::{Engine, Gen};
use tpbsim_validate::bir::ArchLevel;
use tpbsim_validate::diag::Mode;

use crate::cmd::neff::ReadArgs;
use crate::exit::CliError;

/// Generation, engine and NEFF reader options of a command that reads engine streams.
#[derive(clap::Args)]
pub struct StreamArgs {
    /// Target generation: v2..v5, a codename (sunda, cayman, mariana, maverick) or an arch
    /// level (20..50). Required for a `.bin` stream; a `.neff` is read for the generation it
    /// names (kelf `target` or `neff.json` `target_arch`), which --arch overrides, and needs it
    /// when it names `*` or nothing. `sim validate` checks v2..v4; for a `.bir.json` module
    /// (`sim verify`) it overrides the module's own level and also takes `inferentia`.
    #[arg(long, value_name = "GEN", value_parser = parse_arch)]
    pub arch: Option<ArchLevel>,
    /// Engine of a `.bin` stream (pe, act, pool, dve, sp); taken from the file name when
    /// omitted.
    #[arg(long)]
    pub engine: Option<Engine>,
    /// NEFF reader options (digest check, archive size limits).
    #[command(flatten)]
    pub read: ReadArgs,
}

/// How `sim validate` and `sim verify` report.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// Print diagnostics as JSON Lines instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Stop at the first error.
    #[arg(long)]
    pub fail_fast: bool,
}

impl ReportArgs {
    /// The checking mode `--fail-fast` selects.
    pub fn mode(&self) -> Mode {
        if self.fail_fast {
            Mode::FailFast
        } else {
            Mode::CollectAll
        }
    }
}

/// `--arch`: every spelling of a generation (`Gen`'s names) and `inferentia`.
fn parse_arch(s: &str) -> Result<ArchLevel, String> {
    ArchLevel::parse(s).ok_or_else(|| {
        format!("unknown arch `{s}` (expected v2..v5, sunda|cayman|mariana|maverick, 20..50, or inferentia / 10)")
    })
}

impl StreamArgs {
    /// The generation `--arch` names for decoding streams (`None` without `--arch`); a level
    /// tpbsim does not decode (Inferentia) is a usage error.
    pub fn gen(&self) -> Result<Option<Gen>, CliError> {
        self.arch
            .map(|level| {
                level.gen().ok_or_else(|| {
                    CliError::Usage(format!(
                        "--arch {level}: tpbsim decodes streams of v2..v5 only"
                    ))
                })
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        s: StreamArgs,
    }

    fn parse(args: &[&str]) -> Result<StreamArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|c| c.s)
    }

    #[test]
    fn arch_takes_every_generation_name_and_inferentia() {
        for g in Gen::ALL {
            for name in [
                g.short().to_string(),
                g.codename().to_string(),
                g.arch_level().to_string(),
            ] {
                let a = parse(&["--arch", &name]).unwrap();
                assert_eq!(a.gen().unwrap(), Some(g), "{name}");
            }
        }
        let inf = parse(&["--arch", "inferentia"]).unwrap();
        assert_eq!(inf.arch, Some(ArchLevel::Inferentia));
        assert!(matches!(inf.gen(), Err(CliError::Usage(_))));
        assert_eq!(parse(&[]).unwrap().gen().unwrap(), None);
        let e = parse(&["--arch", "v9"]).err().expect("v9 is refused");
        assert!(e.to_string().contains("unknown arch `v9`"), "{e}");
    }
}
