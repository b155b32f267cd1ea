//! `[card_signing]`: the keys an agent's card may be signed with
//! (`trusted_keys`, a JWKS document) and the gateway's own key for the
//! cards it serves (`signing_key`, PEM). Read and checked when the
//! configuration is, so `check-config` refuses a key that would fail every
//! card; `crate::signing` does the cryptography.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::ConfigError;
use super::schema::FileCardSigning;
use crate::signing::{Signer, TrustedKeys};

/// The most bytes a key file may hold.
const MAX_KEY_FILE_BYTES: u64 = 1 << 20;

/// The card-signing keys, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardSigning {
    /// A JWKS document of the public keys agents' cards may be signed with.
    pub trusted_keys: Option<PathBuf>,
    /// The gateway's private key (PEM) for the cards it serves.
    pub signing_key: Option<PathBuf>,
    /// Its JWS algorithm.
    pub signing_alg: String,
    /// Its key id; by default the public key's RFC 7638 thumbprint.
    pub signing_kid: Option<String>,
}

impl Default for CardSigning {
    fn default() -> CardSigning {
        CardSigning {
            trusted_keys: None,
            signing_key: None,
            signing_alg: "ES256".to_owned(),
            signing_kid: None,
        }
    }
}

/// The keys, loaded.
#[derive(Default)]
pub struct CardKeys {
    pub trusted: Option<TrustedKeys>,
    pub signer: Option<Signer>,
}

impl CardSigning {
    /// Reads and checks the files; the message names the key, never a
    /// key's bytes.
    pub fn load(&self) -> Result<CardKeys, String> {
        let trusted = match &self.trusted_keys {
            Some(path) => {
                let text = read("trusted_keys", path)?;
                let text = String::from_utf8(text).map_err(|_| {
                    format!("card_signing.trusted_keys: {}: not UTF-8", path.display())
                })?;
                Some(
                    TrustedKeys::from_jwks(&text)
                        .map_err(|err| format!("card_signing.{err} ({})", path.display()))?,
                )
            }
            None => None,
        };
        let signer = match &self.signing_key {
            Some(path) => {
                let pem = read("signing_key", path)?;
                Some(
                    Signer::from_pem(&pem, &self.signing_alg, self.signing_kid.as_deref())
                        .map_err(|err| format!("card_signing.{err} ({})", path.display()))?,
                )
            }
            None => None,
        };
        Ok(CardKeys { trusted, signer })
    }
}

fn read(key: &str, path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let fail = |message: String| format!("card_signing.{key}: {}: {message}", path.display());
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(fail("larger than 1 MiB".to_owned()));
    }
    Ok(bytes)
}

/// `[card_signing]` as read, its files checked; errors at the table.
pub(super) fn from_file(
    table: Option<&Spanned<FileCardSigning>>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<CardSigning, ConfigError> {
    let Some(table) = table else {
        return Ok(CardSigning::default());
    };
    let file = table.get_ref();
    let defaults = CardSigning::default();
    let signing = CardSigning {
        trusted_keys: file.trusted_keys.as_ref().map(PathBuf::from),
        signing_key: file.signing_key.as_ref().map(PathBuf::from),
        signing_alg: file.signing_alg.clone().unwrap_or(defaults.signing_alg),
        signing_kid: file.signing_kid.clone().filter(|kid| !kid.is_empty()),
    };
    signing
        .load()
        .map_err(|message| at(table.span(), message))?;
    Ok(signing)
}
