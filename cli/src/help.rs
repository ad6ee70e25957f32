//! Two worked examples for the `--help` of every subcommand (clap `after_help`).

/// `sim info`.
pub const INFO: &str = "Examples:
  sim info                       # generations, codenames and geometry
  sim info | grep cayman";
/// `sim disasm`.
pub const DISASM: &str = "Examples:
  sim disasm kernel/sg00/DVE.bin --arch v3
  sim disasm kernel/sg00/PE.bin --arch v3 --syntax neuron > PE.s";
/// `sim asm`.
pub const ASM: &str = "Examples:
  sim asm DVE.s -o kernel/sg00/DVE.bin --arch v3
  sim asm PE.s -o kernel/sg00/PE.bin --arch v3 --deny-warnings   # lint warnings are errors

The language, its lint and a tutorial: docs/asm.md.";
/// `sim decode`.
pub const DECODE: &str = "Examples:
  sim decode kernel/sg00/DVE.bin --arch v3 --json | jq .mnemonic
  sim decode PE.bin --arch v4 --engine pe --json";
/// `sim neff`.
pub const NEFF: &str = "Examples:
  sim neff info testdata/kernels/softmax.neff
  sim neff unpack testdata/kernels/softmax.neff -o softmax.d";
/// `sim neff info`.
pub const NEFF_INFO: &str = "Examples:
  sim neff info testdata/kernels/softmax.neff
  sim neff info testdata/real/concrete_carve.neff --arch v2 --json";
/// `sim neff unpack`.
pub const NEFF_UNPACK: &str = "Examples:
  sim neff unpack testdata/kernels/softmax.neff -o softmax.d
  sim neff unpack kernel.neff -o kernel.d --force";
/// `sim neff pack`.
pub const NEFF_PACK: &str = "Examples:
  sim neff pack softmax.d -o softmax.neff
  sim neff pack kernel.d -o kernel.neff --name my_kernel --force";
/// `sim lift`.
pub const LIFT: &str = "Examples:
  sim lift testdata/kernels/softmax.neff -o softmax.bir.json
  sim lift DVE.bin --arch v3 --engine dve";
/// `sim verify`.
pub const VERIFY: &str = "Examples:
  sim verify testdata/kernels/softmax.neff
  sim verify module.bir.json --rules shared --json";
/// `sim run`.
pub const RUN: &str = "Examples:
  sim run testdata/kernels/softmax.neff
  sim run kernel.neff --input x=x.npy --ref-dir ref --check-races --trace trace.json
  mpirun -np 2 sim run kernel.neff --mpi --ranks 4   # a sim built with --features mpi (docs/mpi.md)

Several kernels (a corpus; docs/mpi.md, \"Corpus runs\"):
  sim run a.neff b.neff c.neff --out-dir out --ref-dir refs --json
  sim run corpus/*.neff --input 'x=inputs/{kernel}/x.npy' --trace 'traces/{kernel}.json'
  mpirun -np 4 sim run corpus/*.neff --mpi           # the kernels sharded over the processes

  Each kernel runs as it would alone (its own world of ranks) and one report covers them all,
  in argument order; the exit code is the worst kernel's (0 ok, 1 mismatch or finding, 2 error,
  3 fault). Kernel K (file stem) writes to OUT/K/ (without --out-dir, K.out/) and reads its
  references from REFDIR/K/ when it exists (without --ref-dir, K.ref/ beside the NEFF).
  --input, --ref and --trace must name {kernel}, replaced by each kernel's stem; an --input or
  --ref of a variable a kernel does not have is passed over for it. Two kernels of the same
  stem are refused. With --mpi, the kernels (not the ranks) are spread over the processes by
  --mpi-placement, each kernel run in one process; process 0 prints the report.";
/// `sim check`.
pub const CHECK: &str = "Examples:
  sim check testdata/kernels/softmax.neff
  sim check kernel.neff --schedules 16 --json";
/// `sim profile`.
pub const PROFILE: &str = "Examples:
  sim profile testdata/kernels/softmax.neff
  sim profile kernel.neff --format neuron-profile-json > profile.json";
/// `sim validate`.
pub const VALIDATE: &str = "Examples:
  sim validate kernel/sg00/PE.bin --arch v3
  sim validate kernel.neff --arch v3 --deny-warnings     # L2 and every lint rule
  mpirun -np 4 sim validate --mpi corpus/*.neff         # sharded (--features mpi, docs/mpi.md)";
/// `sim convert`.
pub const CONVERT: &str = "Examples:
  sim convert --from float32 --to bfloat16 --value 3.14159
  sim convert --from float32 --to float8_e4m3fn < codes.txt   # one hex code per line";
/// `sim fuzz`.
pub const FUZZ: &str = "Examples:
  sim fuzz --arch v3 --cases 10000
  sim fuzz --arch v4 --format Matmul --seed 7 --write-repro repro";
