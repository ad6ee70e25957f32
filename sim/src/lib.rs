//! Execution of NeuronCore engine streams: numerics (cast engine, ALU, activation, PE),
//! engine value models, machine state and the scheduler.

pub mod api;
pub mod machine;
pub mod numerics;
pub mod process;
