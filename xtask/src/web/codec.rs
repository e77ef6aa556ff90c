//! Encodings the offline page needs: base64 (the wasm module and icons), SHA-256 (CSP hashes of
//! inline code), JSON strings safe inside a `<script>` element.

use base64::Engine;
use sha2::{Digest, Sha256};

/// Standard base64 with padding (RFC 4648 §4), what `atob` and `data:` URLs read.
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// A CSP hash source for inline code: `'sha256-BASE64'` of its exact UTF-8 text.
pub fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&sha256(text.as_bytes())))
}

/// `text` as a JSON string literal that is also safe inside an HTML `<script>` element
/// (`<`, `>`, `&` and the JS line separators escaped).
pub fn json_string(text: &str) -> String {
    let json = serde_json::Value::String(text.to_string()).to_string();
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let two_blocks = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(
            hex(&sha256(two_blocks)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million_a = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&sha256(&million_a)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn base64_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn json_string_is_script_safe() {
        assert_eq!(
            json_string("a\"b\\</script>\n\u{1}"),
            r#""a\"b\\\u003c/script\u003e\n\u0001""#
        );
        assert_eq!(json_string("&\u{2028}é"), r#""\u0026\u2028é""#);
    }
}
