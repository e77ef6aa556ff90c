//! The shape of an NVTX op's name: the name with its instance numbers (layer, block, op id,
//! sequence) replaced by `*`, so that `FSDP::pre_forward (blocks.8._checkpoint_wrapped_module)`
//! and `… (blocks.21 …)` are one op, `FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)`.
//!
//! The rule ([`SHAPE_RULE`] states it for people, once):
//!
//! - a maximal run of ASCII digits becomes `*` when it stands on its own: not right after an
//!   ASCII letter (`blocks.21.` → `blocks.*.`, `layer_3` → `layer_*`, `IO 190` → `IO *`,
//!   `Step#41` → `Step#*`);
//! - digits right after a letter are part of a word and stay: `v2`, `fp16`, `bf16`, `conv2d`,
//!   `llama3`, `sm90` name different things, not instances (`Linear4bit` keeps its `4`);
//! - a hexadecimal id written `0x…` becomes `0x*` as a whole (`0x7f3a` → `0x*`); hex without
//!   the prefix cannot be told from a word and is read by the rules above;
//! - a name that is nothing but digits (and spaces) is kept whole: the number is all it says.

use std::borrow::Cow;

/// The grouping rule in one sentence, for the notes of the tables that group by it.
pub const SHAPE_RULE: &str = "NVTX names that differ only in their numbers are one op: a run of digits that does not follow a letter reads as * (blocks.21. → blocks.*., layer_3 → layer_*), a 0x… hex id as 0x*; digits after a letter stay (v2, fp16, conv2d), and a name that is only a number is kept whole";

/// The shape of `name` ([the rule](self)): borrowed when nothing changes. Copies the text
/// between digit runs a slice at a time: a replay asks it of every step's range name.
pub fn op_shape(name: &str) -> Cow<'_, str> {
    let bytes = name.as_bytes();
    let Some(mut i) = next_digit(bytes, 0) else {
        return Cow::Borrowed(name);
    };
    if bytes.iter().all(|b| b.is_ascii_digit() || *b == b' ') {
        return Cow::Borrowed(name);
    }
    let mut out = String::new();
    // `name[..copied]` is in `out`, its instance numbers replaced.
    let mut copied = 0;
    loop {
        // `i` is at a digit, which begins a run (the scan skips whole runs).
        let digits = i + run(&bytes[i..], u8::is_ascii_digit);
        let after_letter = i > 0 && bytes[i - 1].is_ascii_alphabetic();
        let star = match after_letter {
            // A word's digits (`fp16`): kept whole.
            true => None,
            false
                if bytes[i] == b'0'
                    && matches!(bytes.get(i + 1), Some(b'x' | b'X'))
                    && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit) =>
            {
                Some((i + 2, i + 2 + run(&bytes[i + 2..], u8::is_ascii_hexdigit)))
            }
            false => Some((i, digits)),
        };
        let resume = match star {
            Some((at, end)) => {
                out.push_str(&name[copied..at]);
                out.push('*');
                copied = end;
                end
            }
            None => digits,
        };
        match next_digit(bytes, resume) {
            Some(next) => i = next,
            None => break,
        }
    }
    if out.is_empty() {
        return Cow::Borrowed(name);
    }
    out.push_str(&name[copied..]);
    Cow::Owned(out)
}

/// The first ASCII digit at or after `from`.
fn next_digit(bytes: &[u8], from: usize) -> Option<usize> {
    let at = bytes.get(from..)?.iter().position(u8::is_ascii_digit)?;
    Some(from + at)
}

/// How many bytes at the start of `bytes` are `kind`.
fn run(bytes: &[u8], kind: impl Fn(&u8) -> bool) -> usize {
    bytes.iter().take_while(|b| kind(b)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_numbers_read_as_a_star_and_words_keep_their_digits() {
        for (name, shape) in [
            (
                "FSDP::pre_forward (blocks.21._checkpoint_wrapped_module)",
                "FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)",
            ),
            (
                "model.layers.3.self_attn.qkv_proj",
                "model.layers.*.self_attn.qkv_proj",
            ),
            ("layer_12", "layer_*"),
            ("IO 190", "IO *"),
            ("Copy 7 3", "Copy * *"),
            ("ProfilerStep#41", "ProfilerStep#*"),
            ("block 1.5", "block *.*"),
            ("aten::conv2d", "aten::conv2d"),
            ("gemm_fp16_sm90", "gemm_fp16_sm90"),
            ("MoE v2 dispatch", "MoE v2 dispatch"),
            ("Linear4bit", "Linear4bit"),
            ("stream 0x7f3aB0 sync", "stream 0x* sync"),
            ("a0x12", "a0x12"),
            ("0x", "*x"),
            ("190", "190"),
            ("12 34", "12 34"),
            ("forward", "forward"),
            ("", ""),
            ("層3.x", "層*.x"),
        ] {
            assert_eq!(op_shape(name), shape, "{name:?}");
        }
    }

    #[test]
    fn an_unchanged_name_is_borrowed() {
        assert!(matches!(op_shape("aten::to"), Cow::Borrowed(_)));
        assert!(matches!(op_shape("fp16"), Cow::Borrowed(_)));
        assert!(matches!(op_shape("blocks.1"), Cow::Owned(_)));
    }

    #[test]
    fn the_shape_is_the_rule_read_a_character_at_a_time() {
        use rand::{Rng, SeedableRng};
        let alphabet: Vec<char> = "09817x X0a.b_#層 -:()fF".chars().collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(51);
        for _ in 0..20_000 {
            let len = rng.random_range(0..14);
            let name: String = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let (fast, plain) = (op_shape(&name), shape_by_character(&name));
            assert_eq!(fast, plain, "{name:?}");
            assert_eq!(
                matches!(fast, Cow::Borrowed(_)),
                matches!(plain, Cow::Borrowed(_)),
                "{name:?}"
            );
        }
    }

    /// The rule read a character at a time, as it is stated: what [`op_shape`] must give.
    fn shape_by_character(name: &str) -> Cow<'_, str> {
        let bytes = name.as_bytes();
        if !bytes.iter().any(u8::is_ascii_digit)
            || bytes.iter().all(|b| b.is_ascii_digit() || *b == b' ')
        {
            return Cow::Borrowed(name);
        }
        let mut out = String::with_capacity(name.len());
        let mut i = 0;
        let mut changed = false;
        while i < bytes.len() {
            let b = bytes[i];
            let after_letter = i > 0 && bytes[i - 1].is_ascii_alphabetic();
            if b == b'0'
                && !after_letter
                && matches!(bytes.get(i + 1), Some(b'x' | b'X'))
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
            {
                let end = i
                    + 2
                    + bytes[i + 2..]
                        .iter()
                        .take_while(|c| c.is_ascii_hexdigit())
                        .count();
                out.push_str(&name[i..i + 2]);
                out.push('*');
                i = end;
                changed = true;
                continue;
            }
            if b.is_ascii_digit() && !after_letter {
                let end = i + bytes[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                out.push('*');
                i = end;
                changed = true;
                continue;
            }
            if b.is_ascii_digit() {
                // A word's digits (`fp16`): kept whole.
                let end = i + bytes[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                out.push_str(&name[i..end]);
                i = end;
                continue;
            }
            // Copies one character (ASCII or the whole UTF-8 sequence).
            let len = name[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&name[i..i + len]);
            i += len;
        }
        if changed {
            Cow::Owned(out)
        } else {
            Cow::Borrowed(name)
        }
    }
}
