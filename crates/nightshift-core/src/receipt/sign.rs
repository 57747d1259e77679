//! The signed envelope: `{"format": "nightshift-receipt", "receipt": {…}, "signature": {…}}`.
//! The signature is Ed25519 over the canonical bytes of the `receipt` value.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Receipt;
use super::key::{from_hex, key_id};

/// The envelope's `format` field.
pub const ENVELOPE_FORMAT: &str = "nightshift-receipt";
/// The envelope's signature algorithm.
const ALG: &str = "ed25519";

#[derive(Serialize, Deserialize)]
struct Envelope {
    format: String,
    receipt: Value,
    signature: SignatureBlock,
}

#[derive(Serialize, Deserialize)]
struct SignatureBlock {
    alg: String,
    /// The first 16 hex digits of SHA-256 over the public key's 32 bytes.
    key_id: String,
    /// The 64-byte signature, hex.
    sig: String,
}

/// Errors from signing a receipt.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("encode the receipt as JSON")]
    Encode(#[from] serde_json::Error),
}

/// Why a receipt does not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("read the receipt: it is not a nightshift receipt ({0})")]
    Malformed(String),
    #[error("verify the receipt: it was signed by key {found}, not by {expected}")]
    WrongKey { expected: String, found: String },
    #[error("verify the receipt: the signature does not match its content (it was altered)")]
    BadSignature,
    #[error("read the receipt: its content does not decode as receipt version {version} ({error})")]
    Content { version: u32, error: String },
}

/// The bytes a receipt's signature covers: its JSON value with object keys sorted
/// (byte-wise), no whitespace, strings escaped as serde_json escapes them.
pub fn canonical(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                if let Some(v) = map.get(*k) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        Value::String(s) => write_string(s, out),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Null => out.extend_from_slice(b"null"),
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // Serialising a &str cannot fail.
    if let Ok(text) = serde_json::to_string(s) {
        out.extend_from_slice(text.as_bytes());
    }
}

/// Signs `receipt` and returns the envelope as pretty JSON (the receipt file's content).
pub fn sign(receipt: &Receipt, key: &SigningKey) -> Result<String, SignError> {
    let value = serde_json::to_value(receipt)?;
    let signature = key.sign(&canonical(&value));
    let envelope = Envelope {
        format: ENVELOPE_FORMAT.into(),
        receipt: value,
        signature: SignatureBlock {
            alg: ALG.into(),
            key_id: key_id(&key.verifying_key()),
            sig: crate::session::hex(&signature.to_bytes()),
        },
    };
    let mut text = serde_json::to_string_pretty(&envelope)?;
    text.push('\n');
    Ok(text)
}

/// Verifies a receipt file's content against `key` and returns the receipt.
pub fn verify(text: &str, key: &VerifyingKey) -> Result<Receipt, VerifyError> {
    let envelope: Envelope =
        serde_json::from_str(text).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    if envelope.format != ENVELOPE_FORMAT {
        return Err(VerifyError::Malformed(format!(
            "format is `{}`, expected `{ENVELOPE_FORMAT}`",
            envelope.format
        )));
    }
    if envelope.signature.alg != ALG {
        return Err(VerifyError::Malformed(format!(
            "signature algorithm `{}` is not {ALG}",
            envelope.signature.alg
        )));
    }
    let expected = key_id(key);
    if envelope.signature.key_id != expected {
        return Err(VerifyError::WrongKey {
            expected,
            found: envelope.signature.key_id,
        });
    }
    let bytes: [u8; 64] = from_hex(&envelope.signature.sig)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| VerifyError::Malformed("the signature is not 64 bytes of hex".into()))?;
    let signature = Signature::from_bytes(&bytes);
    key.verify(&canonical(&envelope.receipt), &signature)
        .map_err(|_| VerifyError::BadSignature)?;
    let version = envelope
        .receipt
        .get("version")
        .and_then(Value::as_u64)
        .unwrap_or(0) as u32;
    if version != super::RECEIPT_VERSION {
        return Err(VerifyError::Content {
            version,
            error: format!(
                "this nightshift reads receipt version {}; upgrade it",
                super::RECEIPT_VERSION
            ),
        });
    }
    serde_json::from_value(envelope.receipt).map_err(|e| VerifyError::Content {
        version,
        error: e.to_string(),
    })
}
