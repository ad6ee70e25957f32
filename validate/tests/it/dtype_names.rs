//! Every wire dtype tag the L2 predicates can accept has a name of its own for messages.

use tpbsim_isa::Gen;
use tpbsim_validate::l2::dtype;

#[test]
fn every_accepted_dtype_tag_has_its_own_name() {
    let mut seen: Vec<(u8, &str)> = Vec::new();
    for t in 0..=u8::MAX {
        let accepted = [Gen::V2, Gen::V3, Gen::V4, Gen::V5]
            .into_iter()
            .any(|g| dtype::is_valid(g, t, true, true, true));
        if !accepted {
            continue;
        }
        let name = dtype::name(t);
        assert_ne!(name, "unknown", "tag {t:#04x}");
        if let Some(&(u, _)) = seen.iter().find(|(_, n)| *n == name) {
            panic!("tags {u:#04x} and {t:#04x} are both named {name}");
        }
        seen.push((t, name));
    }
    // The byte-sized tags are among them.
    for t in [dtype::INT8, dtype::UINT8] {
        assert!(seen.iter().any(|&(u, _)| u == t), "tag {t:#04x}");
    }
}
