//! Agent card signatures (A2A 1.0 §8.4): a JWS (RFC 7515) with a detached
//! payload, the RFC 8785 canonical form of the card without its
//! `signatures`. The gateway checks an agent's card against keys the
//! operator trusts, and signs the card it serves (whose URLs it rewrote, so
//! the agent's own signatures no longer hold) with a key of its own.
//!
//! Pure (no I/O): the configuration loads it to check the keys, the
//! agents' card refresh verifies, the card route signs.
//!
//! The SDKs disagree on the canonical bytes (A2A issue 2122): the
//! specification keeps the card as it is; a2a-js drops empty and null
//! values; a2a-python (1.x) signs its protobuf card, which it serves with
//! the 0.3 fields merged in and reads back without them, dropping empty
//! strings, lists and objects and the protobuf defaults (`false`, `0`). A
//! signature is checked against each of these forms, and one that
//! verifies under any of them is good. The gateway signs each distinct
//! form (one signature per form, the same key), so a client of any of
//! these finds one that verifies.

mod canonical;

use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use serde_json::{Value, json};

pub use self::canonical::canonical;
use self::canonical::{Form, canonical_forms, v1_fields};

/// What to do with an agent's card signatures (`card_signatures`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Not checked; the served card carries none of the agent's.
    #[default]
    Off,
    /// Checked and reported (`/v1/agents`, a metric); the card is used
    /// whatever the result.
    Verify,
    /// An agent whose card does not verify is not called.
    Require,
}

impl Policy {
    pub fn parse(text: &str) -> Option<Policy> {
        match text {
            "off" => Some(Policy::Off),
            "verify" => Some(Policy::Verify),
            "require" => Some(Policy::Require),
            _ => None,
        }
    }
}

/// What a card's signatures are worth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// One signature verified with this trusted key (its `kid`, if any).
    Verified(Option<String>),
    /// The card carries no signature.
    Unsigned,
    /// It carries signatures, and none verifies with a trusted key.
    Invalid,
}

impl Verdict {
    pub const ALL: [&'static str; 3] = ["verified", "unsigned", "invalid"];

    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Verified(_) => "verified",
            Verdict::Unsigned => "unsigned",
            Verdict::Invalid => "invalid",
        }
    }
}

/// Signatures looked at per card at most: a card is the agent's, and each
/// check costs a public-key operation.
const MAX_SIGNATURES: usize = 8;
/// The longest protected header read.
const MAX_PROTECTED_BYTES: usize = 4096;

/// Why the card-signing keys do not load.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("trusted_keys: not a JWKS document ({0})")]
    Jwks(String),
    #[error("trusted_keys: key {0}: {1}")]
    Key(usize, String),
    #[error("trusted_keys: no public key for signatures")]
    NoKey,
    #[error("signing_key: {0}")]
    Signing(String),
}

/// One public key signatures may be made with.
struct Trusted {
    kid: Option<String>,
    key: DecodingKey,
    /// The algorithms this key verifies: its `alg` when the JWK names one,
    /// else every asymmetric algorithm of its family.
    algorithms: Vec<Algorithm>,
}

/// The keys the operator trusts for agents' cards (a JWKS document).
pub struct TrustedKeys(Vec<Trusted>);

impl TrustedKeys {
    /// From a JWKS document. Symmetric keys (`oct`) are refused: a card's
    /// signature is public, and whoever can check an HMAC can make one.
    pub fn from_jwks(text: &str) -> Result<TrustedKeys, KeyError> {
        let set: JwkSet =
            serde_json::from_str(text).map_err(|err| KeyError::Jwks(err.to_string()))?;
        let mut keys = Vec::new();
        for (index, jwk) in set.keys.iter().enumerate() {
            let algorithms = algorithms_of(jwk)
                .ok_or_else(|| KeyError::Key(index, "not a public signing key".to_owned()))?;
            let key =
                DecodingKey::from_jwk(jwk).map_err(|err| KeyError::Key(index, err.to_string()))?;
            keys.push(Trusted {
                kid: jwk.common.key_id.clone(),
                key,
                algorithms,
            });
        }
        if keys.is_empty() {
            return Err(KeyError::NoKey);
        }
        Ok(TrustedKeys(keys))
    }

    /// Checks `card`'s `signatures`. When the one that verifies covers
    /// only the card's A2A 1.0 fields (a2a-python 1.x's form), `card` is
    /// narrowed to those fields (and its signatures): the 0.3 fields beside
    /// them (`url`, `additionalInterfaces`, a 0.3 scheme's `tokenUrl`) are
    /// nobody's word, and the gateway must not route by them.
    pub fn verify(&self, card: &mut Value) -> Verdict {
        let Some(signatures) = card
            .get("signatures")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
        else {
            return Verdict::Unsigned;
        };
        let forms = canonical_forms(card);
        let verified = signatures
            .iter()
            .take(MAX_SIGNATURES)
            .find_map(|signature| self.check(signature, &forms));
        match verified {
            None => Verdict::Invalid,
            Some((kid, form)) => {
                if form == Form::V1Fields {
                    let signatures = card.get("signatures").cloned();
                    *card = v1_fields(card);
                    if let Some(signatures) = signatures {
                        card["signatures"] = signatures;
                    }
                }
                Verdict::Verified(kid)
            }
        }
    }

    /// The `kid` of the key `signature` verifies with, and over which
    /// form, if one does.
    fn check(&self, signature: &Value, forms: &[(Form, String)]) -> Option<(Option<String>, Form)> {
        let protected = signature.get("protected")?.as_str()?;
        let value = signature.get("signature")?.as_str()?;
        if protected.len() > MAX_PROTECTED_BYTES {
            return None;
        }
        let header: Value = serde_json::from_slice(&b64().decode(protected).ok()?).ok()?;
        let algorithm: Algorithm = header.get("alg")?.as_str()?.parse().ok()?;
        // A header may only narrow the keys, never name one from elsewhere:
        // `jku` and `jwk` are not followed (the agent would pick its judge).
        let kid = header.get("kid").and_then(Value::as_str);
        let candidates = self.0.iter().filter(|trusted| {
            trusted.algorithms.contains(&algorithm)
                && (kid.is_none() || trusted.kid.is_none() || trusted.kid.as_deref() == kid)
        });
        for trusted in candidates {
            for (form, bytes) in forms {
                let message = format!("{protected}.{}", b64().encode(bytes));
                if jsonwebtoken::crypto::verify(value, message.as_bytes(), &trusted.key, algorithm)
                    .unwrap_or(false)
                {
                    return Some((trusted.kid.clone(), *form));
                }
            }
        }
        None
    }
}

/// The gateway's own card-signing key.
pub struct Signer {
    key: EncodingKey,
    algorithm: Algorithm,
    kid: String,
    /// Its public half, published at `/v1/card-keys`.
    public: Jwk,
}

impl Signer {
    /// A PEM private key (PKCS#8, or SEC1 / PKCS#1) for `algorithm`; the
    /// `kid` defaults to the public key's RFC 7638 thumbprint.
    pub fn from_pem(pem: &[u8], algorithm: &str, kid: Option<&str>) -> Result<Signer, KeyError> {
        let algorithm: Algorithm = algorithm
            .parse()
            .map_err(|_| KeyError::Signing(format!("{algorithm:?} is not a JWS algorithm")))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
            _ => {
                return Err(KeyError::Signing(
                    "an asymmetric algorithm (ES256, ES384, RS256…, PS256…, EdDSA)".to_owned(),
                ));
            }
        }
        .map_err(|err| KeyError::Signing(format!("not a {algorithm:?} private key ({err})")))?;
        let mut public = Jwk::from_encoding_key(&key, algorithm)
            .map_err(|err| KeyError::Signing(format!("no public key from it ({err})")))?;
        // A signature over a test message must check with the public half:
        // a key that does not match its algorithm fails here, not in a
        // client.
        let decoding = DecodingKey::from_jwk(&public)
            .map_err(|err| KeyError::Signing(format!("no public key from it ({err})")))?;
        let probe = jsonwebtoken::crypto::sign(b"probe", &key, algorithm)
            .map_err(|err| KeyError::Signing(format!("it does not sign ({err})")))?;
        if !jsonwebtoken::crypto::verify(&probe, b"probe", &decoding, algorithm).unwrap_or(false) {
            return Err(KeyError::Signing(
                "its signatures do not verify with its own public key".to_owned(),
            ));
        }
        let kid = match kid {
            Some(kid) => kid.to_owned(),
            None => public.thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256),
        };
        public.common.key_id = Some(kid.clone());
        Ok(Signer {
            key,
            algorithm,
            kid,
            public,
        })
    }

    /// Its key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as a JWKS document.
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.public] })
    }

    /// Replaces `card`'s signatures with the gateway's own, one per
    /// distinct canonical form (the specification's first). `jku`: where
    /// the gateway's keys are published.
    pub fn sign(&self, card: &mut Value, jku: Option<&str>) {
        if let Some(object) = card.as_object_mut() {
            object.remove("signatures");
        }
        let mut header = json!({ "alg": self.algorithm, "typ": "JOSE", "kid": self.kid });
        if let Some(jku) = jku {
            header["jku"] = Value::from(jku);
        }
        let protected = b64().encode(header.to_string());
        let mut signatures = Vec::new();
        for (_, form) in canonical_forms(card) {
            let message = format!("{protected}.{}", b64().encode(form));
            match jsonwebtoken::crypto::sign(message.as_bytes(), &self.key, self.algorithm) {
                Ok(signature) => {
                    signatures.push(json!({ "protected": protected, "signature": signature }));
                }
                // The key signed a probe at start; a failure now is the
                // gateway's, and the card goes without that signature
                // rather than not at all.
                Err(err) => tracing::error!("gateway could not sign a card: {err}"),
            }
        }
        if !signatures.is_empty() {
            card["signatures"] = Value::Array(signatures);
        }
    }
}

/// The algorithms a trusted JWK verifies; `None` for one that is not an
/// asymmetric signing key.
fn algorithms_of(jwk: &Jwk) -> Option<Vec<Algorithm>> {
    use jsonwebtoken::jwk::{AlgorithmParameters, KeyAlgorithm, PublicKeyUse};
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|u| *u != PublicKeyUse::Signature)
    {
        return None;
    }
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(_) => vec![Algorithm::ES256, Algorithm::ES384],
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
        AlgorithmParameters::OctetKey(_) => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(family),
        Some(named) => {
            let named: Algorithm = match named {
                KeyAlgorithm::ES256 => Algorithm::ES256,
                KeyAlgorithm::ES384 => Algorithm::ES384,
                KeyAlgorithm::RS256 => Algorithm::RS256,
                KeyAlgorithm::RS384 => Algorithm::RS384,
                KeyAlgorithm::RS512 => Algorithm::RS512,
                KeyAlgorithm::PS256 => Algorithm::PS256,
                KeyAlgorithm::PS384 => Algorithm::PS384,
                KeyAlgorithm::PS512 => Algorithm::PS512,
                KeyAlgorithm::EdDSA => Algorithm::EdDSA,
                _ => return None,
            };
            family.contains(&named).then(|| vec![named])
        }
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

#[cfg(test)]
mod tests {
    use super::canonical::{Prune, pruned};
    use super::*;

    fn ec_pem() -> String {
        rcgen::KeyPair::generate().expect("a key").serialize_pem()
    }

    fn card() -> Value {
        json!({
            "name": "weather", "description": "Forecasts, \u{e9}t\u{e9} \"quoted\"",
            "version": "1.0.0", "skills": [], "documentationUrl": "",
            "supportedInterfaces": [{ "url": "https://agent/a2a", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0", "tenant": "t1" }],
            "capabilities": { "streaming": true, "pushNotifications": false, "extensions": [] },
            "defaultInputModes": ["text/plain"], "count": 3, "ratio": 0.5, "big": 1e21,
        })
    }

    fn trusted(signer: &Signer) -> TrustedKeys {
        TrustedKeys::from_jwks(&signer.jwks().to_string()).expect("keys")
    }

    #[test]
    fn canonical_form_follows_rfc_8785() {
        // RFC 8785 §3.2.3's ordering example: by UTF-16 code units, so
        // U+1F600 (a surrogate pair) sorts before U+FB33.
        let value = json!({ "\u{20ac}": 1, "\r": 2, "\u{fb33}": 3, "1": 4, "\u{1f600}": 5,
            "\u{80}": 6, "\u{f6}": 7 });
        assert_eq!(
            canonical(&value),
            "{\"\\r\":2,\"1\":4,\"\u{80}\":6,\"\u{f6}\":7,\"\u{20ac}\":1,\"\u{1f600}\":5,\"\u{fb33}\":3}"
        );
        assert_eq!(
            canonical(&json!([1e21, 0.5, 100, -0.0, 1e-7, "\u{1}\t"])),
            "[1e+21,0.5,100,0,1e-7,\"\\u0001\\t\"]"
        );
    }

    #[test]
    fn a_signed_card_verifies_and_any_change_breaks_it() {
        let signer = Signer::from_pem(ec_pem().as_bytes(), "ES256", Some("gw-1")).expect("signer");
        let keys = trusted(&signer);
        let mut card = card();
        signer.sign(&mut card, Some("https://gw/v1/card-keys"));
        assert_eq!(
            keys.verify(&mut card.clone()),
            Verdict::Verified(Some("gw-1".to_owned()))
        );
        // One signature per distinct form; signing again replaces them.
        let count = card["signatures"].as_array().map_or(0, Vec::len);
        assert!((2..=4).contains(&count), "{count}");
        signer.sign(&mut card, None);
        assert_eq!(card["signatures"].as_array().map_or(0, Vec::len), count);
        let mut tampered = card.clone();
        tampered["description"] = json!("Forecasts, now cheaper");
        assert_eq!(keys.verify(&mut tampered), Verdict::Invalid);
        let mut moved = card.clone();
        moved["supportedInterfaces"][0]["url"] = json!("https://elsewhere/a2a");
        assert_eq!(keys.verify(&mut moved), Verdict::Invalid);
        let mut unsigned = card.clone();
        unsigned.as_object_mut().map(|o| o.remove("signatures"));
        assert_eq!(keys.verify(&mut unsigned), Verdict::Unsigned);
        // Another key, even one named like the trusted one, does not verify.
        let other = Signer::from_pem(ec_pem().as_bytes(), "ES256", Some("gw-1")).expect("signer");
        let mut forged = card.clone();
        other.sign(&mut forged, None);
        assert_eq!(keys.verify(&mut forged), Verdict::Invalid);
    }

    #[test]
    fn a_signature_over_the_pruned_form_verifies() {
        // As a2a-python signs: empty strings, lists and objects dropped.
        let signer = Signer::from_pem(ec_pem().as_bytes(), "ES256", None).expect("signer");
        let mut card = card();
        let pruned_form = canonical(
            &pruned(
                &card,
                Prune {
                    nulls: false,
                    defaults: false,
                },
            )
            .expect("a card"),
        );
        let protected = b64().encode(json!({ "alg": "ES256", "kid": signer.kid }).to_string());
        let message = format!("{protected}.{}", b64().encode(&pruned_form));
        let signature =
            jsonwebtoken::crypto::sign(message.as_bytes(), &signer.key, Algorithm::ES256)
                .expect("signed");
        card["signatures"] = json!([{ "protected": protected, "signature": signature }]);
        assert!(matches!(
            trusted(&signer).verify(&mut card),
            Verdict::Verified(_)
        ));
    }

    #[test]
    fn a_card_signed_by_a2a_sdk_verifies_as_it_served_it() {
        // Its signature is over its protobuf card; what it served also has
        // the 0.3 fields merged in (`additionalInterfaces`, `url`, …).
        let recorded: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/signed-card-a2a-sdk-1.3.0.json"
        )))
        .expect("the recording");
        let keys = TrustedKeys::from_jwks(&recorded["jwks"].to_string()).expect("keys");
        let served = &recorded["card"];
        assert!(served.get("additionalInterfaces").is_some());
        let mut card = served.clone();
        assert_eq!(
            keys.verify(&mut card),
            Verdict::Verified(Some("agent-key".to_owned()))
        );
        // What its signature covers, and no more: the 0.3 fields go.
        assert_eq!(card.get("additionalInterfaces"), None);
        assert_eq!(card.get("url"), None);
        assert_eq!(card["supportedInterfaces"], served["supportedInterfaces"]);
        assert_eq!(card["signatures"], served["signatures"]);
        let mut tampered = served.clone();
        tampered["skills"][0]["examples"][0] = json!("free");
        assert_eq!(keys.verify(&mut tampered), Verdict::Invalid);
        // A 0.3 field changed still verifies, but is not kept.
        let mut moved = served.clone();
        moved["url"] = json!("http://127.0.0.1:1/elsewhere");
        assert!(matches!(keys.verify(&mut moved), Verdict::Verified(_)));
        assert_eq!(moved.get("url"), None);
    }

    #[test]
    fn headers_cannot_pick_their_judge() {
        let signer = Signer::from_pem(ec_pem().as_bytes(), "ES256", Some("k")).expect("signer");
        let keys = trusted(&signer);
        let mut card = card();
        signer.sign(&mut card, None);
        let good = card["signatures"][0].clone();
        let rewrite = |header: Value| {
            let mut signature = good.clone();
            signature["protected"] = json!(b64().encode(header.to_string()));
            let mut card = card.clone();
            card["signatures"] = json!([signature]);
            keys.verify(&mut card)
        };
        // "none", an HMAC over the public key, another algorithm, garbage.
        assert_eq!(
            rewrite(json!({ "alg": "none", "kid": "k" })),
            Verdict::Invalid
        );
        assert_eq!(
            rewrite(json!({ "alg": "HS256", "kid": "k" })),
            Verdict::Invalid
        );
        assert_eq!(
            rewrite(json!({ "alg": "RS256", "kid": "k" })),
            Verdict::Invalid
        );
        assert_eq!(rewrite(json!("not an object")), Verdict::Invalid);
        let mut card = card.clone();
        card["signatures"] = json!([{ "protected": "%%%", "signature": 7 }, "x", null]);
        assert_eq!(keys.verify(&mut card), Verdict::Invalid);
        // A symmetric key is not a trusted key.
        let oct = json!({ "keys": [{ "kty": "oct", "k": "c2VjcmV0", "kid": "h" }] });
        assert!(TrustedKeys::from_jwks(&oct.to_string()).is_err());
    }

    #[test]
    fn a_signing_key_that_is_not_one_is_refused_with_its_reason() {
        let err = |pem: &str, alg: &str| {
            Signer::from_pem(pem.as_bytes(), alg, None)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err("not a key", "ES256").starts_with("signing_key: not a ES256 private key"));
        assert!(err(&ec_pem(), "HS256").contains("an asymmetric algorithm"));
        assert!(err(&ec_pem(), "XX1").contains("is not a JWS algorithm"));
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// Any JSON an agent may send as a card.
        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<f64>().prop_map(|f| json!(f)),
                ".{0,12}".prop_map(Value::from),
            ];
            leaf.prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::btree_map(".{0,8}", inner, 0..6)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        /// A signature entry as a hostile card may hold one: any header
        /// (a real algorithm and the trusted key's id among them) and any
        /// signature bytes.
        fn signature() -> impl Strategy<Value = Value> {
            let algs = prop_oneof![
                Just("ES256"),
                Just("HS256"),
                Just("none"),
                Just("RS256"),
                Just("EdDSA")
            ];
            (algs, json(), prop::collection::vec(any::<u8>(), 0..80)).prop_map(
                |(alg, extra, bytes)| {
                    let header = json!({ "alg": alg, "kid": "k", "x": extra });
                    json!({
                        "protected": b64().encode(header.to_string()),
                        "signature": b64().encode(bytes),
                    })
                },
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(128))]

            /// Whatever an agent's card holds, checking it never panics and
            /// nothing but a signature by the trusted key verifies.
            #[test]
            fn hostile_cards_never_verify(
                card in json(),
                signatures in prop::collection::vec(signature(), 0..4),
                junk in json(),
            ) {
                let signer = Signer::from_pem(ec_pem().as_bytes(), "ES256", Some("k"))
                    .expect("signer");
                let keys = trusted(&signer);
                let mut card = match card {
                    Value::Object(map) => Value::Object(map),
                    other => json!({ "name": other }),
                };
                card["signatures"] = Value::Array(signatures);
                prop_assert!(!matches!(keys.verify(&mut card.clone()), Verdict::Verified(_)));
                card["signatures"] = junk;
                prop_assert!(!matches!(keys.verify(&mut card.clone()), Verdict::Verified(_)));
                // Signed, it verifies; the canonical form reads back as JSON.
                signer.sign(&mut card, None);
                prop_assert!(matches!(keys.verify(&mut card.clone()), Verdict::Verified(_)));
                prop_assert!(serde_json::from_str::<Value>(&canonical(&card)).is_ok());
            }
        }
    }
}
