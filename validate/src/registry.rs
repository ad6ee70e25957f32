//! The rule registry: pluggable L1 rules selected by property, run in one of two modes, with a
//! report generator and an instrument that verifies between pipeline stages.
//!
//! A rule is a small type implementing [`Rule`]: a name (the compiler function it reproduces),
//! the [`Property`] it establishes, its assertion-code space, and
//! `verify(&Module, &mut Vec<Diagnostic>)`. The [`Registry`] maps each property to its rule;
//! a [`PropertySet`] chooses what runs. Rules are independent: one rule's findings never stop
//! another. Results come out in walk order (module-scope findings first, then instruction by
//! instruction), ties broken by registration order, so [`Mode::FailFast`] reports exactly the
//! error a verifier that throws on its first violation would.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::str::FromStr;

use crate::bir::{InstRef, Module};
use crate::diag::{Diagnostic, Mode, Severity};
use crate::l1;

macro_rules! properties {
    ( $( $variant:ident = $name:literal: $doc:literal; )* ) => {
        /// A property of a BIR module that one rule establishes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Property {
            $( #[doc = $doc] $variant, )*
        }

        impl Property {
            /// Every property, in registration order.
            pub const ALL: &'static [Property] = &[ $( Property::$variant, )* ];

            /// Kebab-case name used on the command line.
            pub const fn name(self) -> &'static str {
                match self { $( Property::$variant => $name, )* }
            }
        }
    };
}

properties! {
    Fp8TypeConsistency = "fp8-type-consistency": "No module mixes legacy and OCP fp8 tensors (checkFP8TypeConsistency).";
    InstCount = "inst-count": "Module instruction-count limits (checkInstCount).";
    SbIo = "sb-io": "SBUF-resident module I/O (checkSbIO).";
    MemType = "mem-type": "Operands live in the memory types their class allows (checkMemType, 310).";
    ArchLevel = "arch-level": "The class exists on the module's architecture level (checkArchLevel, 366/367).";
    ValidEngines = "valid-engines": "Each instruction runs on an engine its class allows (checkValidEngines, 400).";
    PartitionAccess = "partition-access": "Access patterns stay within the partitions (checkLegalPartitionAccess).";
    DataType = "data-type": "Operand dtypes are valid for the class (checkDataType).";
    MatmultMxInputs = "matmult-mx-inputs": "MatmultMx shape contract, 11 asserts (checkMatmultMxInputs).";
    MatmultMxInstruction = "matmult-mx-instruction": "MatmultMx instruction contract, 7 asserts (checkMatmultMxInstruction).";
    CollectiveIo = "collective-io": "Collectives never read or write module I/O tensors (checkCollective).";
    CollectiveCompute = "collective-compute": "Collective arch, outputs, kind, placement and replica-group ratios (checkCollectiveCompute).";
    CollectivesInDynamicCfg = "collectives-in-dynamic-cfg": "Only local collectives inside dynamic control flow (checkCollectivesInDynamicCFG, 123/1500).";
    BirKernel = "bir-kernel": "BIRKernel operands at base partition 0 (checkBIRKernel).";
    NkiKernelFunction = "nki-kernel-function": "NKIKernel names its kernel function (checkNKIKernelFunction).";
    NkiKernelBufferShapes = "nki-kernel-buffer-shapes": "NKIKernel buffer shapes (checkNKIKernelBufferShapes, 1680-1683).";
    CustomOp = "custom-op": "CustomOp only on legacy levels (checkCustomOp, 178).";
    GpsimdSb2Sb = "gpsimd-sb2sb": "GPSIMDSB2SB gate and compatibility C1-C8 (InstGPSIMDSB2SB::verify).";
    WriteInPlace = "write-in-place": "In-place writes are alias-safe (checkWriteInPlaceValidity).";
    ArchLevelForEnum = "arch-level-for-enum": "Enum-valued parameters exist on the module's level (checkArchLevelForEnum).";
    InstructionCommon = "instruction-common": "The common Instruction checks (visitInstruction; not public, reported as not checked).";
    TensorIndirectIo = "tensor-indirect-io": "Indirect operands (checkTensorIndirectIO; not public, reported as not checked).";
    LoopVerifiers = "loop-verifiers": "Loop / DynamicForLoop / DoWhile verifiers (not public, reported as not checked).";
    Select = "select": "Select shape / mode gate (checkSelect; not public, reported as not checked).";
    Iota = "iota": "Iota shape / mode gate (checkIota; not public, reported as not checked).";
    MemsetMode = "memset-mode": "Memset mode gate (checkMemsetMode; not public, reported as not checked).";
    NkiAddressRotation = "nki-kernel-address-rotation-scope": "NKIKernel address-rotation scope (checkNKIKernelAddressRotationScope; not public, reported as not checked).";
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown property, rule or group name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule or property `{0}` (try `sim verify --list-rules`)")]
pub struct UnknownProperty(pub String);

impl FromStr for Property {
    type Err = UnknownProperty;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Property::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| UnknownProperty(s.to_string()))
    }
}

/// A set of properties.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PropertySet(u64);

impl PropertySet {
    /// No property.
    pub const fn empty() -> Self {
        PropertySet(0)
    }

    /// Every property.
    pub fn all() -> Self {
        Property::ALL.iter().fold(PropertySet(0), |s, p| s.with(*p))
    }

    /// The default set: every structural L1 property.
    pub fn default_l1() -> Self {
        PropertySet::all()
    }

    /// The five shared helpers.
    pub fn shared_helpers() -> Self {
        [
            Property::MemType,
            Property::ArchLevel,
            Property::ValidEngines,
            Property::PartitionAccess,
            Property::DataType,
        ]
        .into_iter()
        .collect()
    }

    /// The module-scope pre-checks.
    pub fn module_scope() -> Self {
        [
            Property::Fp8TypeConsistency,
            Property::InstCount,
            Property::SbIo,
        ]
        .into_iter()
        .collect()
    }

    /// Builder: add a property.
    pub const fn with(self, p: Property) -> Self {
        PropertySet(self.0 | 1 << p as u32)
    }

    /// Builder: remove a property.
    pub const fn without(self, p: Property) -> Self {
        PropertySet(self.0 & !(1 << p as u32))
    }

    /// Add a property.
    pub fn insert(&mut self, p: Property) {
        *self = self.with(p);
    }

    /// Remove a property.
    pub fn remove(&mut self, p: Property) {
        *self = self.without(p);
    }

    /// Union.
    pub const fn union(self, o: PropertySet) -> Self {
        PropertySet(self.0 | o.0)
    }

    /// Difference.
    pub const fn difference(self, o: PropertySet) -> Self {
        PropertySet(self.0 & !o.0)
    }

    /// Membership.
    pub const fn contains(self, p: Property) -> bool {
        self.0 & (1 << p as u32) != 0
    }

    /// True when empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Members in registration order.
    pub fn iter(self) -> impl Iterator<Item = Property> {
        Property::ALL
            .iter()
            .copied()
            .filter(move |p| self.contains(*p))
    }

    /// Parse a comma-separated list of property names, rule names (`checkValidEngines`) or
    /// groups (`all`, `default`, `shared`, `module`), resolving rule names through `registry`.
    pub fn parse_list(s: &str, registry: &Registry) -> Result<Self, UnknownProperty> {
        let mut set = PropertySet::empty();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            set = set.union(match item.to_ascii_lowercase().as_str() {
                "all" => PropertySet::all(),
                "default" => PropertySet::default_l1(),
                "shared" | "helpers" => PropertySet::shared_helpers(),
                "module" => PropertySet::module_scope(),
                _ => match item.parse::<Property>() {
                    Ok(p) => PropertySet::empty().with(p),
                    Err(e) => match registry
                        .rules
                        .iter()
                        .find(|r| r.name().eq_ignore_ascii_case(item))
                    {
                        Some(r) => PropertySet::empty().with(r.property()),
                        None => return Err(e),
                    },
                },
            });
        }
        Ok(set)
    }
}

impl FromIterator<Property> for PropertySet {
    fn from_iter<I: IntoIterator<Item = Property>>(it: I) -> Self {
        it.into_iter().fold(PropertySet::empty(), PropertySet::with)
    }
}

impl fmt::Debug for PropertySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(Property::name))
            .finish()
    }
}

/// One verification rule.
pub trait Rule: Send + Sync {
    /// The rule's name: the compiler function it reproduces (`checkValidEngines`).
    fn name(&self) -> &'static str;
    /// The property it establishes.
    fn property(&self) -> Property;
    /// The assertion codes it can report (empty when the source gives none).
    fn codes(&self) -> &'static [u32];
    /// One line: what it checks.
    fn summary(&self) -> &'static str;
    /// The seed section its logic comes from.
    fn source(&self) -> &'static str;
    /// What parts rest on `project-defined` data (empty when none).
    fn project_defined(&self) -> &'static str {
        ""
    }
    /// Whether the rule looks at one instruction at a time ([`Rule::check`]) or at the whole
    /// module ([`Rule::verify`]). The default, `Module`, runs [`Rule::verify`], which is right
    /// for any rule; `Instruction` lets the registry fuse the rule into its shared walk.
    fn scope(&self) -> Scope {
        Scope::Module
    }
    /// Check one instruction and append findings (instruction-scope rules).
    fn check(&self, _module: &Module, _inst: &InstRef<'_>, _out: &mut Vec<Diagnostic>) {}
    /// Check the module and append findings. The default walks every instruction through
    /// [`Rule::check`].
    fn verify(&self, module: &Module, out: &mut Vec<Diagnostic>) {
        module.walk(&mut |r| self.check(module, r, out));
    }
}

/// Where a rule looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// At the module as a whole (pre-checks, rules that carry state across instructions).
    Module,
    /// At one instruction at a time: the registry runs every such rule in one shared walk.
    Instruction,
}

/// Verification failed: at least one error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{} error(s){}", self.error_count(), self.stage.as_ref().map(|s| format!(" at stage {s}")).unwrap_or_default())]
pub struct VerificationError {
    /// The pipeline stage, when raised by an [`Instrument`].
    pub stage: Option<String>,
    /// Every diagnostic of the run (only up to the first error in fail-fast mode).
    pub diagnostics: Vec<Diagnostic>,
}

impl VerificationError {
    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }
}

/// Maps properties to rules.
pub struct Registry {
    rules: Vec<Box<dyn Rule>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::l1()
    }
}

impl Registry {
    /// A registry with no rules.
    pub fn empty() -> Self {
        Registry { rules: Vec::new() }
    }

    /// Every L1 rule, in the order the compiler's driver runs them (module pre-checks, then per
    /// instruction: memory type, arch level, engines, partitions, dtypes, op-specific checks).
    pub fn l1() -> Self {
        let mut r = Registry::empty();
        for rule in l1::rules() {
            r.register(rule);
        }
        r
    }

    /// Register a rule; it replaces any rule already registered for its property.
    pub fn register(&mut self, rule: Box<dyn Rule>) {
        match self
            .rules
            .iter()
            .position(|r| r.property() == rule.property())
        {
            Some(i) => self.rules[i] = rule,
            None => self.rules.push(rule),
        }
    }

    /// The rules in registration order.
    pub fn rules(&self) -> impl Iterator<Item = &dyn Rule> {
        self.rules.iter().map(|b| b.as_ref())
    }

    /// The rule for a property.
    pub fn rule(&self, p: Property) -> Option<&dyn Rule> {
        self.rules().find(|r| r.property() == p)
    }

    /// True when a rule is registered for `p`.
    pub fn has(&self, p: Property) -> bool {
        self.rule(p).is_some()
    }

    /// Run the rules of `props` over `module` and return their diagnostics in walk order.
    /// Module-scope rules run first; instruction-scope rules share one walk, each instruction
    /// checked by every rule in registration order. In [`Mode::FailFast`] the list ends at the
    /// first error.
    pub fn verify(&self, props: PropertySet, module: &Module, mode: Mode) -> Vec<Diagnostic> {
        let selected: Vec<(usize, &dyn Rule)> = self
            .rules()
            .enumerate()
            .filter(|(_, r)| props.contains(r.property()))
            .collect();
        let mut tagged: Vec<(usize, Diagnostic)> = Vec::new();
        let mut buf = Vec::new();
        for &(order, rule) in selected.iter().filter(|(_, r)| r.scope() == Scope::Module) {
            rule.verify(module, &mut buf);
            tagged.extend(buf.drain(..).map(|d| (order, d)));
        }
        let per_inst: Vec<(usize, &dyn Rule)> = selected
            .iter()
            .copied()
            .filter(|(_, r)| r.scope() == Scope::Instruction)
            .collect();
        if !per_inst.is_empty() {
            module.walk(&mut |r| {
                for &(order, rule) in &per_inst {
                    rule.check(module, r, &mut buf);
                    if !buf.is_empty() {
                        tagged.extend(buf.drain(..).map(|d| (order, d)));
                    }
                }
            });
        }
        // Instruction-scope findings are already in walk order; module-scope findings located
        // at an instruction need placing among them.
        if tagged.iter().any(|(order, d)| {
            d.location.function.is_some() && self.rules[*order].scope() == Scope::Module
        }) {
            let positions = Positions::of(module);
            tagged.sort_by_cached_key(|(order, d)| (positions.key(d), *order));
        } else {
            tagged.sort_by_key(|(_, d)| d.location.function.is_some());
        }
        let mut out: Vec<Diagnostic> = tagged.into_iter().map(|(_, d)| d).collect();
        if mode == Mode::FailFast {
            if let Some(i) = out.iter().position(Diagnostic::is_error) {
                out.truncate(i + 1);
            }
        }
        out
    }

    /// Run and fail when any error was found.
    pub fn verify_or_error(
        &self,
        props: PropertySet,
        module: &Module,
        mode: Mode,
    ) -> Result<Vec<Diagnostic>, VerificationError> {
        let diagnostics = self.verify(props, module, mode);
        if diagnostics.iter().any(Diagnostic::is_error) {
            Err(VerificationError {
                stage: None,
                diagnostics,
            })
        } else {
            Ok(diagnostics)
        }
    }
}

/// Walk positions of a module's instructions, for ordering diagnostics: per block (keyed by
/// function index and block path), the walk position of each instruction index. Built with
/// one allocation per block, none per instruction.
struct Positions {
    functions: HashMap<String, usize>,
    blocks: HashMap<(usize, String), Vec<usize>>,
}

impl Positions {
    fn of(m: &Module) -> Self {
        let functions = m
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        let mut blocks: HashMap<(usize, String), Vec<usize>> = HashMap::new();
        let mut cur: Option<(usize, String)> = None;
        let mut cur_vec: Vec<usize> = Vec::new();
        m.walk(&mut |r| {
            let same = cur
                .as_ref()
                .is_some_and(|(f, b)| *f == r.func_index && b == r.block_path);
            if !same {
                if let Some(k) = cur.take() {
                    blocks.insert(k, std::mem::take(&mut cur_vec));
                }
                let k = (r.func_index, r.block_path.to_string());
                cur_vec = blocks.remove(&k).unwrap_or_default();
                cur = Some(k);
            }
            if cur_vec.len() <= r.index {
                cur_vec.resize(r.index + 1, usize::MAX);
            }
            cur_vec[r.index] = r.position;
        });
        if let Some(k) = cur {
            blocks.insert(k, cur_vec);
        }
        Positions { functions, blocks }
    }

    /// Module-scope findings first, then by function, then by instruction position.
    fn key(&self, d: &Diagnostic) -> (usize, usize, usize) {
        let l = &d.location;
        let Some(f) = &l.function else {
            return (0, 0, 0);
        };
        let Some(&fi) = self.functions.get(f) else {
            return (1, usize::MAX, usize::MAX);
        };
        let pos = match (&l.block, &l.instruction) {
            (Some(b), Some(i)) => {
                let index = i.split(':').next().and_then(|n| n.parse::<usize>().ok());
                index
                    .and_then(|n| {
                        self.blocks
                            .get(&(fi, b.clone()))
                            .and_then(|v| v.get(n))
                            .copied()
                    })
                    .map_or(usize::MAX, |p| p.saturating_add(1))
            }
            _ => 0,
        };
        (1, fi, pos)
    }
}

/// Standard stage names for [`Instrument`].
pub mod stage {
    /// After the bundles are decoded (before lifting).
    pub const AFTER_DECODE: &str = "after-decode";
    /// After the lifter produced BIR.
    pub const AFTER_LIFT: &str = "after-lift";
    /// Right before simulation starts.
    pub const BEFORE_SIM: &str = "before-sim";
}

/// Verifies chosen properties between pipeline stages: the pipeline calls
/// [`Instrument::run`] with the stage it just finished; a stage with no properties is a no-op.
pub struct Instrument<'r> {
    registry: &'r Registry,
    stages: Vec<(String, PropertySet)>,
    mode: Mode,
}

impl<'r> Instrument<'r> {
    /// An instrument over `registry` that checks nothing yet.
    pub fn new(registry: &'r Registry, mode: Mode) -> Self {
        Instrument {
            registry,
            stages: Vec::new(),
            mode,
        }
    }

    /// Builder: verify `props` at `stage` (adds to what the stage already checks).
    pub fn at(mut self, stage: &str, props: PropertySet) -> Self {
        match self.stages.iter_mut().find(|(s, _)| s == stage) {
            Some((_, p)) => *p = p.union(props),
            None => self.stages.push((stage.to_string(), props)),
        }
        self
    }

    /// The properties checked at `stage`.
    pub fn properties(&self, stage: &str) -> PropertySet {
        self.stages
            .iter()
            .find(|(s, _)| s == stage)
            .map_or(PropertySet::empty(), |(_, p)| *p)
    }

    /// Verify `module` at `stage`: the diagnostics, or an error carrying them when any is an
    /// error.
    pub fn run(&self, stage: &str, module: &Module) -> Result<Vec<Diagnostic>, VerificationError> {
        let props = self.properties(stage);
        if props.is_empty() {
            return Ok(Vec::new());
        }
        self.registry
            .verify_or_error(props, module, self.mode)
            .map_err(|e| VerificationError {
                stage: Some(stage.to_string()),
                ..e
            })
    }
}

/// The lint rules (bundle level, `crate::lint`): name, code, scope, what each finds and the fix
/// it names. Codes 9001.. are project-defined.
pub fn lint_rules() -> &'static [crate::lint::LintRule] {
    crate::lint::RULES
}

/// Counts of a diagnostics list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Errors.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// Rules that applied but could not decide.
    pub not_checked: usize,
    /// Notes.
    pub notes: usize,
}

impl Summary {
    /// Count a list.
    pub fn of(diags: &[Diagnostic]) -> Self {
        let mut s = Summary::default();
        for d in diags {
            match d.severity {
                Severity::Error => s.errors += 1,
                Severity::Warning => s.warnings += 1,
                Severity::NotChecked => s.not_checked += 1,
                Severity::Note => s.notes += 1,
            }
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} error(s), {} warning(s), {} not checked, {} note(s)",
            self.errors, self.warnings, self.not_checked, self.notes
        )
    }
}

fn finding_line(d: &Diagnostic) -> String {
    let mut s = format!("{} [{:?} {}", d.severity.as_str(), d.layer, d.rule);
    if let Some(c) = d.code {
        let _ = write!(s, " #{c}");
    }
    let _ = write!(s, "]: {}", d.message);
    s
}

/// The text report: findings grouped by function, block and instruction, then a summary line.
pub fn report_text(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    let (mut cur_f, mut cur_b, mut cur_i): (Option<&str>, Option<&str>, Option<&str>) =
        (None, None, None);
    let mut module_header = false;
    for d in diags {
        let l = &d.location;
        match &l.function {
            None => {
                if !module_header {
                    out.push_str("module\n");
                    module_header = true;
                }
                let _ = writeln!(out, "  {}", finding_line(d));
                continue;
            }
            Some(f) => {
                if cur_f != Some(f.as_str()) {
                    let _ = writeln!(out, "function {f}");
                    cur_f = Some(f);
                    cur_b = None;
                    cur_i = None;
                }
            }
        }
        if let Some(b) = &l.block {
            if cur_b != Some(b.as_str()) {
                let _ = writeln!(out, "  block {b}");
                cur_b = Some(b);
                cur_i = None;
            }
        }
        if let Some(i) = &l.instruction {
            if cur_i != Some(i.as_str()) {
                match l.engine {
                    Some(e) => {
                        let _ = writeln!(out, "    {i} on {e}");
                    }
                    None => {
                        let _ = writeln!(out, "    {i}");
                    }
                }
                cur_i = Some(i);
            }
        }
        let _ = writeln!(out, "      {}", finding_line(d));
    }
    let _ = writeln!(out, "{}", Summary::of(diags));
    out
}

/// JSON Lines: one object per diagnostic, the keys of [`Diagnostic::to_json`].
pub fn report_jsonl(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&d.to_json().to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{ArchLevel, Block, EngineType, Function, InstClass, Instruction};
    use crate::diag::{Layer, Location};

    /// Reports one error per instruction of a given class, plus one module-scope note.
    struct Flag(Property, InstClass);

    impl Rule for Flag {
        fn name(&self) -> &'static str {
            "flag"
        }
        fn property(&self) -> Property {
            self.0
        }
        fn codes(&self) -> &'static [u32] {
            &[1]
        }
        fn summary(&self) -> &'static str {
            "test"
        }
        fn source(&self) -> &'static str {
            "test"
        }
        fn verify(&self, m: &Module, out: &mut Vec<Diagnostic>) {
            m.walk(&mut |r| {
                if r.inst.class == self.1 {
                    out.push(
                        Diagnostic::error(Layer::L1, "flag", Some(1), format!("{}", self.0))
                            .at(r.location()),
                    );
                }
            });
            out.push(
                Diagnostic::error(Layer::L1, "flag", None, "module").with_severity(Severity::Note),
            );
        }
    }

    fn module() -> Module {
        Module {
            name: None,
            arch: ArchLevel::CoreV4,
            functions: vec![Function {
                name: "main".into(),
                attrs: Default::default(),
                blocks: vec![Block {
                    name: "bb0".into(),
                    dynamic_cfg: false,
                    instructions: vec![
                        Instruction::new(InstClass::Activation, EngineType::Act),
                        Instruction::new(InstClass::TensorTensor, EngineType::Dve),
                        Instruction::new(InstClass::Activation, EngineType::Act),
                    ],
                }],
            }],
        }
    }

    fn registry() -> Registry {
        let mut r = Registry::empty();
        r.register(Box::new(Flag(Property::MemType, InstClass::TensorTensor)));
        r.register(Box::new(Flag(Property::ArchLevel, InstClass::Activation)));
        r
    }

    #[test]
    fn walk_order_then_rule_order() {
        let r = registry();
        let d = r.verify(PropertySet::all(), &module(), Mode::CollectAll);
        let seq: Vec<(Option<&str>, &str)> = d
            .iter()
            .map(|d| (d.location.instruction.as_deref(), d.message.as_str()))
            .collect();
        assert_eq!(
            seq,
            vec![
                (None, "module"),
                (None, "module"),
                (Some("0:Activation"), "arch-level"),
                (Some("1:TensorTensor"), "mem-type"),
                (Some("2:Activation"), "arch-level"),
            ]
        );
    }

    #[test]
    fn selection_and_fail_fast() {
        let r = registry();
        let only_mem = PropertySet::empty().with(Property::MemType);
        let d = r.verify(only_mem, &module(), Mode::CollectAll);
        assert_eq!(d.iter().filter(|d| d.is_error()).count(), 1);
        let d = r.verify(PropertySet::all(), &module(), Mode::FailFast);
        assert_eq!(d.last().map(|d| d.message.as_str()), Some("arch-level"));
        assert_eq!(d.iter().filter(|d| d.is_error()).count(), 1);
        assert!(r
            .verify_or_error(PropertySet::empty(), &module(), Mode::CollectAll)
            .is_ok());
        let e = r
            .verify_or_error(PropertySet::all(), &module(), Mode::CollectAll)
            .unwrap_err();
        assert_eq!(e.error_count(), 3);
    }

    #[test]
    fn replacing_a_rule() {
        let mut r = registry();
        r.register(Box::new(Flag(Property::MemType, InstClass::Activation)));
        assert_eq!(r.rules().count(), 2);
        let d = r.verify(
            PropertySet::empty().with(Property::MemType),
            &module(),
            Mode::CollectAll,
        );
        assert_eq!(d.iter().filter(|d| d.is_error()).count(), 2);
    }

    #[test]
    fn instrument_runs_per_stage() {
        let r = registry();
        let ins = Instrument::new(&r, Mode::CollectAll)
            .at(
                stage::AFTER_LIFT,
                PropertySet::empty().with(Property::MemType),
            )
            .at(
                stage::AFTER_LIFT,
                PropertySet::empty().with(Property::ArchLevel),
            );
        assert!(ins.run(stage::BEFORE_SIM, &module()).unwrap().is_empty());
        let e = ins.run(stage::AFTER_LIFT, &module()).unwrap_err();
        assert_eq!(e.stage.as_deref(), Some("after-lift"));
        assert_eq!(e.error_count(), 3);
        assert!(e.to_string().contains("at stage after-lift"));
    }

    #[test]
    fn property_parsing() {
        let r = Registry::l1();
        let s = PropertySet::parse_list("valid-engines, checkArchLevel,module", &r).unwrap();
        assert!(
            s.contains(Property::ValidEngines)
                && s.contains(Property::ArchLevel)
                && s.contains(Property::SbIo)
        );
        assert!(!s.contains(Property::MemType));
        assert!(PropertySet::parse_list("nope", &r).is_err());
        assert_eq!(
            PropertySet::parse_list("all", &r).unwrap(),
            PropertySet::all()
        );
        for p in Property::ALL {
            assert_eq!(p.name().parse::<Property>().unwrap(), *p);
            assert!(r.has(*p), "no rule for {p}");
        }
    }

    #[test]
    fn reports() {
        let r = registry();
        let mut d = r.verify(PropertySet::all(), &module(), Mode::CollectAll);
        for x in &mut d {
            x.location.file = Some("k.bir.json".into());
        }
        let text = report_text(&d);
        assert!(text.starts_with("module\n"), "{text}");
        assert!(text.contains("function main\n  block bb0\n    0:Activation on act\n      error [L1 flag #1]: arch-level\n"), "{text}");
        assert!(
            text.ends_with("3 error(s), 0 warning(s), 0 not checked, 2 note(s)\n"),
            "{text}"
        );
        let jl = report_jsonl(&d);
        let first: serde_json::Value = serde_json::from_str(jl.lines().nth(2).unwrap()).unwrap();
        for k in [
            "file",
            "engine",
            "index",
            "offset",
            "layer",
            "rule",
            "code",
            "severity",
            "field",
            "message",
            "function",
            "block",
            "instruction",
        ] {
            assert!(first.get(k).is_some(), "missing {k}");
        }
        assert_eq!(first["instruction"], "0:Activation");
        assert_eq!(first["file"], "k.bir.json");
        let _ = Location::default();
    }
}
