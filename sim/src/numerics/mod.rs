//! The numbers the simulator is built on: number formats, the cast engine, MX block scaling,
//! and the arithmetic of the engines.
//!
//! The policy (rounding, saturation, NaN forms, device-versus-reference choices) and its
//! sources are documented in `docs/numerics.md`.

pub mod format;

pub use format::{Format, Kind, UnknownFormat};
