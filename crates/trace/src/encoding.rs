//! Parquet's encodings of values and levels, as the trace writer's column chunks use them:
//! the RLE / bit-packing hybrid (definition and repetition levels, dictionary indices),
//! `DELTA_BINARY_PACKED` (integers) and `PLAIN` (strings, booleans). Byte layouts follow the
//! Parquet format's `Encodings.md`.
//!
//! Each function appends one encoded stream to a byte vector. This module must not know the
//! trace schema, pages or files (that is `crate::row_group`).

/// Values per block of `DELTA_BINARY_PACKED`.
const BLOCK: usize = 128;
/// Miniblocks per block; each has its own bit width.
const MINIBLOCKS: usize = 4;
/// Values per miniblock.
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// Appends `value` as an unsigned LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// The bits needed for `value`.
pub(crate) fn bit_width(value: u64) -> u8 {
    (64 - value.leading_zeros()) as u8
}

/// Appends `values`, each below `1 << width`, packed `width` bits each, least significant
/// bit first; the last byte is zero-filled. The caller pads `values` to the length its format
/// needs.
fn bit_pack(out: &mut Vec<u8>, values: &[u64], width: u8) {
    if width == 0 {
        return;
    }
    let width = u32::from(width);
    let (mut word, mut filled) = (0u64, 0u32);
    for &value in values {
        word |= value << filled;
        filled += width;
        if filled >= 64 {
            out.extend_from_slice(&word.to_le_bytes());
            filled -= 64;
            // The bits of `value` that did not fit (none when it ended the word exactly).
            word = value.checked_shr(width - filled).unwrap_or(0);
        }
    }
    out.extend_from_slice(&word.to_le_bytes()[..filled.div_ceil(8) as usize]);
}

/// Appends the RLE / bit-packing hybrid of levels 0 or 1 given as a bitmap (bit `i` of byte
/// `i / 8` is level `i`, least significant bit first) of `count` levels: one run of the
/// repeated value when all are equal, else one bit-packed run, whose bytes are the bitmap.
pub(crate) fn bitmap_levels(out: &mut Vec<u8>, bitmap: &[u8], count: usize, ones: usize) {
    if ones == 0 || ones == count {
        put_varint(out, (count as u64) << 1);
        out.push(u8::from(ones == count));
        return;
    }
    let groups = count.div_ceil(8);
    put_varint(out, ((groups as u64) << 1) | 1);
    out.extend_from_slice(&bitmap[..groups]);
}

/// Appends the RLE / bit-packing hybrid of `values`, each below `1 << width` (`width` at
/// most 8), as one bit-packed run (or nothing for no values).
pub(crate) fn hybrid(out: &mut Vec<u8>, values: &[u8], width: u8) {
    debug_assert!(width <= 8, "hybrid packs at most 8 bits per value");
    if values.is_empty() {
        return;
    }
    put_varint(out, ((values.len().div_ceil(8) as u64) << 1) | 1);
    let width = u32::from(width);
    out.reserve(values.len().div_ceil(8) * 8 + 8);
    for group in values.chunks(8) {
        let word = group.iter().rev().fold(0u64, |word, value| (word << width) | u64::from(*value));
        // Eight bytes, then the ones past the group's `width` dropped: no variable-length copy.
        let end = out.len() + width as usize;
        out.extend_from_slice(&word.to_le_bytes());
        out.truncate(end);
    }
}

/// Appends `values` in `DELTA_BINARY_PACKED`: a header, then blocks of 128 differences
/// between neighbours, each block less its smallest difference and packed per miniblock of
/// 32 at the miniblock's own bit width. Differences wrap, as the format says they do.
pub(crate) fn delta_binary_packed(out: &mut Vec<u8>, values: &[i64]) {
    put_varint(out, BLOCK as u64);
    put_varint(out, MINIBLOCKS as u64);
    put_varint(out, values.len() as u64);
    put_varint(out, zigzag(values.first().copied().unwrap_or(0)));
    let mut offsets = [0u64; BLOCK];
    for start in (1..values.len()).step_by(BLOCK) {
        let block = &values[start - 1..values.len().min(start + BLOCK)];
        let deltas = block.len() - 1;
        let mut least = i64::MAX;
        for (offset, pair) in offsets.iter_mut().zip(block.windows(2)) {
            let delta = pair[1].wrapping_sub(pair[0]);
            least = least.min(delta);
            *offset = delta as u64;
        }
        put_varint(out, zigzag(least));
        offsets[..deltas].iter_mut().for_each(|offset| *offset = offset.wrapping_sub(least as u64));
        offsets[deltas..deltas.next_multiple_of(MINIBLOCK)].fill(0);
        let used = deltas.div_ceil(MINIBLOCK);
        let mut widths = [0u8; MINIBLOCKS];
        for (width, miniblock) in widths.iter_mut().zip(offsets.chunks(MINIBLOCK)).take(used) {
            *width = bit_width(miniblock.iter().fold(0, |all, offset| all | offset));
        }
        out.extend_from_slice(&widths);
        for (width, miniblock) in widths.iter().zip(offsets.chunks(MINIBLOCK)).take(used) {
            bit_pack(out, miniblock, *width);
        }
    }
}

/// Appends strings in `PLAIN`: each as its length (4 bytes, little-endian) and its bytes.
pub(crate) fn plain_strings<'a>(out: &mut Vec<u8>, values: impl Iterator<Item = &'a str>) {
    for value in values {
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        out.extend_from_slice(value.as_bytes());
    }
}

/// Appends booleans in `PLAIN`: one bit each, least significant bit first.
pub(crate) fn plain_booleans(out: &mut Vec<u8>, values: impl Iterator<Item = bool>) {
    let (mut byte, mut filled) = (0u8, 0);
    for value in values {
        byte |= u8::from(value) << filled;
        filled += 1;
        if filled == 8 {
            out.push(byte);
            (byte, filled) = (0, 0);
        }
    }
    if filled > 0 {
        out.push(byte);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xAC, 0x02]);
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn bit_packing_is_least_significant_first() {
        let mut out = Vec::new();
        bit_pack(&mut out, &[0, 1, 2, 3, 4, 5, 6, 7], 3);
        // The format's own example: 0 to 7 in 3 bits each.
        assert_eq!(out, [0b1000_1000, 0b1100_0110, 0b1111_1010]);
    }

    #[test]
    fn bit_packing_fills_whole_words_at_any_width() {
        for width in 1..=64u8 {
            let most = u64::MAX >> (64 - u32::from(width));
            let values: Vec<u64> = (0..32u64).map(|i| if i % 3 == 0 { most } else { i & most }).collect();
            let mut out = Vec::new();
            bit_pack(&mut out, &values, width);
            assert_eq!(out.len(), 4 * usize::from(width));
            let bit = |index: usize| (out[index / 8] >> (index % 8)) & 1;
            for (index, value) in values.iter().enumerate() {
                let start = index * usize::from(width);
                let read =
                    (0..usize::from(width)).fold(0u64, |read, b| read | (u64::from(bit(start + b)) << b));
                assert_eq!(read, *value, "value {index} at width {width}");
            }
        }
    }

    #[test]
    fn the_hybrid_packs_groups_of_eight() {
        let mut out = Vec::new();
        hybrid(&mut out, &[0, 1, 2, 3, 4, 5, 6, 7, 1], 3);
        assert_eq!(out, [(2 << 1) | 1, 0b1000_1000, 0b1100_0110, 0b1111_1010, 1, 0, 0]);
    }

    #[test]
    fn equal_levels_make_one_run() {
        let mut out = Vec::new();
        bitmap_levels(&mut out, &[0xFF; 2], 10, 10);
        assert_eq!(out, [20, 1]);
        out.clear();
        bitmap_levels(&mut out, &[0b0000_0101, 0], 10, 2);
        assert_eq!(out, [(2 << 1) | 1, 0b0000_0101, 0]);
    }
}
