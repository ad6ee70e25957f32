//! The NeuronCore engine ISA as tpbsim reads it: generations, engines, the 64-byte bundle,
//! the declarative encoding spec and everything derived from it (typed per-generation formats,
//! decode, encode, field metadata, text and JSON forms).
//!
//! ```
//! use tpbsim_isa::{decode, Bundle, Gen, Inst, Matmul};
//! let mut b = Bundle::ZERO;
//! b.0[0] = 0x02; // MATMUL
//! b.0[1] = 0x10;
//! b.0[32] = 0x06; // in_dtype BF16
//! let inst = decode(&b, Gen::V3).unwrap();
//! assert_eq!(inst.mnemonic(), "MATMUL");
//! match inst {
//!     Inst::Matmul(m) => assert_eq!(m.in_dtype(), tpbsim_isa::Dtype::BF16),
//!     _ => unreachable!(),
//! }
//! assert_eq!(inst.encode(), b);
//! ```

#![forbid(unsafe_op_in_unsafe_fn)]

pub mod arch;
pub mod bundle;
pub mod check;
pub mod desc;
pub mod docs;
pub mod dtype;
pub mod engine;
pub mod formats;
pub mod fsio;
pub mod geometry;
pub mod inst;
pub mod ranges;
pub mod spec;
#[cfg(any(test, feature = "proptest"))]
pub mod strategies;
pub mod stream;
pub mod text;
pub mod visit;
pub mod wire;

pub use arch::Gen;
pub use bundle::{Bundle, BUNDLE_SIZE};
pub use desc::{Addr4, Addr4Kind, Addr8, MemPattern, MxIndirect16b, MxMemPattern1d, Tensor};
pub use dtype::NumFormat;
pub use engine::Engine;
pub use formats::*;
pub use geometry::Geometry;
pub use inst::{
    decode, DecodeError, FieldMeta, FieldValue, LayoutMeta, OwnedFieldValue, PatternValue, RawInst,
};
pub use stream::{EngineStream, StreamError};
pub use visit::{InstVisitor, VISITOR_METHODS};
pub use wire::{DtypePair, Events, EventsExt, F32Bits, Header, Wire, INST_WORD_LEN};
