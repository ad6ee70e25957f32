//! `is_valid_ctrl_es`: EventSemaphore 0xA0 (`CTRL_ES`) — the extended events block at +0x20
//! (isa-facts §2.5).

use super::super::header;
use super::super::rule::{Ck, Field, Sink};

/// Extended wait mode.
pub const X_WAIT_MODE: Field = Field::new("events_ext.wait_mode", 0x20, 1);
/// Extended update mode.
pub const X_UPDATE_MODE: Field = Field::new("events_ext.update_mode", 0x22, 1);
/// Extended wait value.
pub const X_WAIT_VALUE: Field = Field::new("events_ext.sem_wait_value", 0x24, 4);
/// Extended update value.
pub const X_UPDATE_VALUE: Field = Field::new("events_ext.sem_update_value", 0x28, 4);

/// `is_valid_ctrl_es`: the extended block's wait/update modes are enum members and its REG
/// forms name registers; the block's remaining bytes are not checked.
pub fn is_valid_ctrl_es<S: Sink>(ck: &mut Ck<S>) {
    header::events_block(ck, X_WAIT_MODE, X_UPDATE_MODE, X_WAIT_VALUE, X_UPDATE_VALUE);
    super::spec_reserved(ck);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::Gen;

    #[test]
    fn extended_events() {
        let mut b = hdr(0xA0);
        b.0[0x20] = 0x05;
        b.0[0x22] = 0x13;
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_es).is_empty());
        b.0[0x22] = 0x16;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_es),
            ["has_valid_neuron_events.is_valid_enum(UPDATE_MODE)"]
        );
    }
}
