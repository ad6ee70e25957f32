//! Every number format the engines read or write: the simulator's name for the one
//! number-format type, [`tpbsim_isa::NumFormat`] (generated from the spec's `NUM_FORMATS` rows,
//! `isa/spec/dtypes.rs`, with its names, BIR ordinals, container sizes and wire tags per
//! generation). The simulator's formats are [`Format::DEVICE`]: the 20 BIR formats and the
//! unpacked `float4_e2m1fn`.

/// A number format (the simulator's name for [`tpbsim_isa::NumFormat`]).
pub use tpbsim_isa::dtype::NumFormat as Format;
pub use tpbsim_isa::dtype::{Kind, UnknownFormat};

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::Gen;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in Format::DEVICE {
            assert!(seen.insert(f.name()), "duplicate name {}", f.name());
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        let err = "float8".parse::<Format>().unwrap_err();
        assert!(err.to_string().contains("float8_e4m3fn"), "{err}");
        assert_eq!(Format::from_name("BFLOAT16"), None);
    }

    #[test]
    fn bir_ordinals_follow_the_compiler_list() {
        let list = "uint8, int8, float4_e2m1fn_x4, float8_e3m4, float8_e4m3, float8_e4m3fn, \
                    float8_e8m0fnu, float8_e5m2, float8_e4m3fn_x4, float8_e5m2_x4, uint16, int16, \
                    bfloat16, float16, uint32, int32, float32, float32r, uint64, int64";
        for (i, name) in list.split(", ").enumerate() {
            let f = Format::from_bir_ordinal(i as u8).unwrap();
            assert_eq!(f.name(), name);
            assert_eq!(f.bir_ordinal(), Some(i as u8));
        }
        assert_eq!(Format::from_bir_ordinal(20), None);
        assert_eq!(Format::Float4E2m1fn.bir_ordinal(), None);
    }

    #[test]
    fn container_sizes_match_the_compiler_size_table() {
        // The compiler's per-ordinal container byte sizes.
        let sizes = [1, 1, 2, 1, 1, 1, 1, 1, 4, 4, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8];
        for (i, &s) in sizes.iter().enumerate() {
            let f = Format::from_bir_ordinal(i as u8).unwrap();
            assert_eq!(f.container_bytes(), s, "{f}");
            assert_eq!(
                f.element_bits() as usize * f.lanes(),
                8 * s,
                "{f}: lanes × element bits must fill the container"
            );
        }
        let packed: Vec<_> = Format::DEVICE
            .into_iter()
            .filter(|f| f.is_packed())
            .map(|f| f.bir_ordinal())
            .collect();
        assert_eq!(packed, [Some(2), Some(8), Some(9)]);
    }

    #[test]
    fn wire_tags_follow_the_bir_table() {
        // (BIR ordinal, tag before v4, tag on v4+).
        let table: [(u8, u8, u8); 20] = [
            (0, 0x03, 0x03),
            (1, 0x02, 0x02),
            (2, 0x05, 0x10),
            (3, 0x0D, 0x0D),
            (4, 0x0E, 0x0E),
            (5, 0x0E, 0x0E),
            (6, 0x03, 0x03),
            (7, 0x0F, 0x0F),
            (8, 0x0E, 0x0E),
            (9, 0x0F, 0x0F),
            (10, 0x05, 0x05),
            (11, 0x04, 0x04),
            (12, 0x06, 0x06),
            (13, 0x07, 0x07),
            (14, 0x09, 0x09),
            (15, 0x08, 0x08),
            (16, 0x0A, 0x0A),
            (17, 0x0B, 0x0B),
            (18, 0x01, 0x01),
            (19, 0x0C, 0x0C),
        ];
        for (ord, pre, v4) in table {
            let f = Format::from_bir_ordinal(ord).unwrap();
            assert_eq!(f.wire_tag(Gen::V2), Some(pre), "{f}");
            assert_eq!(f.wire_tag(Gen::V3), Some(pre), "{f}");
            assert_eq!(f.wire_tag(Gen::V4), Some(v4), "{f}");
            assert_eq!(f.wire_tag(Gen::V5), Some(v4), "{f}");
        }
        assert_eq!(Format::Float4E2m1fn.wire_tag(Gen::V3), None);
        assert_eq!(Format::Float4E2m1fn.wire_tag(Gen::V4), Some(0x10));
    }

    #[test]
    fn wire_tag_decoding_is_consistent_with_encoding() {
        for gen in Gen::ALL {
            for tag in 0..=0xFFu8 {
                if let Some(f) = Format::from_wire_tag(tag, gen) {
                    assert_eq!(f.wire_tag(gen), Some(tag), "{gen:?} tag {tag:#x} → {f}");
                }
            }
            assert_eq!(Format::from_wire_tag(0x00, gen), None);
            assert_eq!(Format::from_wire_tag(0x0E, gen), Some(Format::Float8E4m3fn));
            assert_eq!(Format::from_wire_tag(0x11, gen), None);
        }
        assert_eq!(Format::from_wire_tag(0x10, Gen::V3), None);
        assert_eq!(
            Format::from_wire_tag(0x10, Gen::V4),
            Some(Format::Float4E2m1fnX4)
        );
    }

    #[test]
    fn elements_and_kinds() {
        assert_eq!(Format::Float8E5m2X4.element(), Format::Float8E5m2);
        assert_eq!(Format::Float4E2m1fnX4.element(), Format::Float4E2m1fn);
        assert_eq!(Format::Int32.element(), Format::Int32);
        assert_eq!(Format::Int16.kind(), Kind::Signed);
        assert_eq!(Format::Uint64.kind(), Kind::Unsigned);
        assert_eq!(Format::Float8E8m0fnu.kind(), Kind::Float);
        assert_eq!(Format::Float8E4m3fnX4.max_finite(), Some(448.0));
        assert_eq!(Format::Bfloat16.max_finite(), Some(3.3895314e38));
        assert_eq!(Format::Int8.max_finite(), None);
    }
}
