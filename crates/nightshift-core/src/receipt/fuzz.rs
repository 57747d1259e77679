//! Property tests over `replay`'s input: no receipt file or public key text, arbitrary or a
//! genuine receipt damaged at any byte, makes the verifier panic, and a damaged receipt never
//! verifies as a different receipt. Bounded for `cargo test` (`PROPTEST_CASES` raises it).

use proptest::prelude::*;

use super::key;
use super::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn keypair() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7u8; 32])
}

/// A genuine signed receipt with up to six splices: bytes inserted, replaced or cut anywhere.
fn damaged() -> impl Strategy<Value = Vec<u8>> {
    let edit = (
        any::<prop::sample::Index>(),
        0usize..3,
        proptest::collection::vec(any::<u8>(), 0..4),
    );
    proptest::collection::vec(edit, 1..6).prop_map(|edits| {
        let mut bytes = sign(&super::tests::sample(), &keypair())
            .unwrap_or_default()
            .into_bytes();
        for (at, kind, insert) in edits {
            let at = at.index(bytes.len() + 1);
            match kind {
                0 => {
                    bytes.splice(at..at, insert);
                }
                1 => {
                    let end = (at + insert.len()).min(bytes.len());
                    bytes.splice(at..end, insert);
                }
                _ => {
                    let end = (at + 1 + insert.len()).min(bytes.len());
                    bytes.drain(at..end);
                }
            }
        }
        bytes
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_never_panics_the_verifier(text in any::<String>()) {
        let _ = verify(&text, &keypair().verifying_key());
        let _ = key::parse_public(&text, std::path::Path::new("k.pub"));
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
            let _ = canonical(&value);
        }
    }

    #[test]
    fn a_damaged_receipt_never_panics_and_never_verifies_as_another(bytes in damaged()) {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(receipt) = verify(&text, &keypair().verifying_key()) {
            // Only damage the signature does not cover (whitespace between tokens) can pass.
            prop_assert_eq!(receipt, super::tests::sample());
        }
    }
}
