use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::key::{self, KeyError};
use super::*;

pub(super) fn sample() -> Receipt {
    Receipt {
        version: RECEIPT_VERSION,
        run_id: "20260101T000000Z-abcd".into(),
        item: "alpha".into(),
        attempt: 1,
        written_at: "2026-01-01T00:00:00Z".into(),
        target: "main".into(),
        base: "a".repeat(40),
        verdict: Verdict::Unverified,
        success: false,
        missing: vec!["guards".into()],
        halt_reason: Some("success_condition_met".into()),
        reason: None,
        item_state: Some("shipped".into()),
        shipped_commit: Some("b".repeat(40)),
        agent: AgentTuple {
            kind: "claude".into(),
            binary: Some("claude".into()),
            version: Some("1.0.0".into()),
            model: Some("opus".into()),
            args: vec![],
            argv: None,
        },
        prompt: vec![ManifestEntry {
            path: "logs/x.prompt.md".into(),
            sha256: "0".repeat(64),
        }],
        context: vec![],
        seeds: vec![],
        iterations: vec![Iteration {
            iteration: 1,
            sessions: vec![SessionRecord {
                outcome: Outcome::Completed,
                exit_code: Some(0),
                duration_ms: 10,
                tokens: Some(Tokens {
                    input: 100,
                    output: 10,
                    cache_read: 0,
                    cache_write: 0,
                    weighted: 110.0,
                    turns: 1,
                }),
                cost_usd: Some(0.0125),
                confinement: Some("landlock".into()),
            }],
            checks: vec![CheckRecord {
                stage: CheckStage::Work,
                command: "sh check.sh alpha — ünïcode \"quoted\"".into(),
                timeout_ms: 60_000,
                env: BTreeMap::from([("NIGHTSHIFT_ITEM".into(), "alpha".into())]),
                commit: Some("c".repeat(40)),
                tree: Some("d".repeat(40)),
                outcome: Outcome::Completed,
                exit_code: Some(0),
                green: true,
                failing: None,
                format: None,
                fingerprint: "e".repeat(64),
                log: None,
                duration_ms: 5,
                confinement: None,
            }],
        }],
        spend: SpendTotals::default(),
        guards: vec![],
        guards_complete: false,
        determinism: vec![],
        determinism_bound: None,
    }
}

fn keypair() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7u8; 32])
}

#[test]
fn a_signed_receipt_verifies_and_round_trips() {
    let key = keypair();
    let text = sign(&sample(), &key).unwrap();
    let back = verify(&text, &key.verifying_key()).unwrap();
    assert_eq!(back, sample());
}

#[test]
fn reformatting_the_file_keeps_the_signature_valid() {
    let key = keypair();
    let text = sign(&sample(), &key).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compact = serde_json::to_string(&value).unwrap();
    assert!(verify(&compact, &key.verifying_key()).is_ok());
}

#[test]
fn changing_any_value_breaks_the_signature() {
    let key = keypair();
    let text = sign(&sample(), &key).unwrap();
    for (from, to) in [
        ("\"input\": 100", "\"input\": 101"),
        ("\"green\": true", "\"green\": false"),
        ("sh check.sh alpha", "sh check.sh alphb"),
        ("\"attempt\": 1", "\"attempt\": 2"),
    ] {
        assert!(text.contains(from), "{from}");
        let tampered = text.replacen(from, to, 1);
        assert!(
            matches!(
                verify(&tampered, &key.verifying_key()),
                Err(VerifyError::BadSignature)
            ),
            "{from} -> {to}"
        );
    }
}

#[test]
fn a_flipped_signature_byte_fails() {
    let key = keypair();
    let text = sign(&sample(), &key).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sig = value["signature"]["sig"].as_str().unwrap().to_owned();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('0') { "1" } else { "0" },
        &sig[1..]
    );
    value["signature"]["sig"] = flipped.into();
    let tampered = serde_json::to_string(&value).unwrap();
    assert!(matches!(
        verify(&tampered, &key.verifying_key()),
        Err(VerifyError::BadSignature)
    ));
}

#[test]
fn another_key_is_named_not_trusted() {
    let text = sign(&sample(), &keypair()).unwrap();
    let other = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    assert!(matches!(
        verify(&text, &other.verifying_key()),
        Err(VerifyError::WrongKey { .. })
    ));
    assert!(matches!(
        verify("{not json", &other.verifying_key()),
        Err(VerifyError::Malformed(_))
    ));
}

#[test]
fn canonical_bytes_sort_keys_and_drop_whitespace() {
    let value: serde_json::Value =
        serde_json::from_str(r#"{ "b": [1, {"z": null, "a": "x\ny"}], "a": 1.5 }"#).unwrap();
    assert_eq!(
        String::from_utf8(canonical(&value)).unwrap(),
        r#"{"a":1.5,"b":[1,{"a":"x\ny","z":null}]}"#
    );
}

#[test]
fn a_new_key_is_private_to_its_owner_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("data")
        .join("nightshift")
        .join(key::KEY_FILE);
    let first = key::load_or_create(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
    let again = key::load_or_create(&path).unwrap();
    assert_eq!(first.to_bytes(), again.to_bytes());
    // Public half: written, read back, same key.
    let pub_path = key::write_public(dir.path(), &first.verifying_key()).unwrap();
    assert_eq!(key::read_public(&pub_path).unwrap(), first.verifying_key());
}

#[test]
fn a_key_file_others_can_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(key::KEY_FILE);
    key::load_or_create(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = key::load_or_create(&path).unwrap_err();
    assert!(
        matches!(err, KeyError::LoosePermissions { mode: 0o644, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

#[test]
fn a_malformed_key_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(key::KEY_FILE);
    std::fs::write(&path, "not a key\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(matches!(
        key::load_or_create(&path),
        Err(KeyError::Malformed { .. })
    ));
    assert!(key::parse_public("ed25519 zz", &path).is_err());
}

#[test]
fn the_final_green_check_is_the_last_green_one() {
    let mut r = sample();
    let mut red = r.iterations[0].checks[0].clone();
    red.green = false;
    red.fingerprint = "f".repeat(64);
    r.iterations[0].checks.push(red);
    assert_eq!(
        r.final_green_check().map(|c| c.fingerprint.clone()),
        Some("e".repeat(64))
    );
}
