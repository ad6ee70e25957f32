//! The NeuronCore engine ISA as tpbsim reads it: generations, engines, the 64-byte bundle,
//! the declarative encoding spec and everything derived from it.

#![forbid(unsafe_op_in_unsafe_fn)]

pub mod arch;
pub mod bundle;
pub mod engine;
pub mod neff;
pub mod stream;

pub use arch::Gen;
pub use bundle::{Bundle, BUNDLE_SIZE};
pub use engine::Engine;
pub use stream::{EngineStream, StreamError};
