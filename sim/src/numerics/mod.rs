//! The numbers the simulator is built on: the cast engine, MX block scaling and the arithmetic
//! of the engines, over the number formats of [`tpbsim_isa::NumFormat`].
//!
//! The policy (rounding, saturation, NaN forms, device-versus-reference choices) and its
//! sources are documented in `docs/numerics.md`.

pub mod act;
pub mod alu;
pub mod cast;
pub mod dequant;
pub mod mx;
pub mod pe;
pub mod reduce;
pub mod simd;

pub use cast::{
    cast, cast_slice, from_f32, from_f32_slice, to_f32, to_f32_slice, CastError, CastPolicy,
    FloatToInt,
};
