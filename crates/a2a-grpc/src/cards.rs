//! A card a gRPC client asked the agent for through the gateway, with the
//! gateway's addresses in place of the agent's. The card is rewritten on
//! the wire, field by field: what the gateway does not touch (skills,
//! security schemes, fields of versions it does not know) goes back as
//! the agent's bytes, so nothing is lost to a message type written for
//! the gateway's own reading. The signatures go: they covered the agent's
//! addresses, which the card no longer names.

use prost::Message as _;
use prost::bytes::Buf;
use prost::encoding::{WireType, decode_key, decode_varint, encode_key, encode_varint};

use crate::{v03, v10};

/// Where the gateway serves an agent: its JSON-RPC URL, and its gRPC
/// address (`host:port`) when a gRPC client can reach the agent there (the
/// default agent, no path prefix).
pub struct GatewayAddresses<'a> {
    pub json_rpc: &'a str,
    pub grpc: Option<&'a str>,
}

/// The gateway's gRPC address (`host:port`) for a card served at
/// `public` + `mount`: only at the root of a public base without a path,
/// where gRPC clients can call (they send no path prefix).
pub fn grpc_address(public: &str, mount: &str) -> Option<String> {
    if !mount.is_empty() {
        return None;
    }
    let url = url::Url::parse(public).ok()?;
    if !url.path().trim_matches('/').is_empty() {
        return None;
    }
    let host = url.host_str()?;
    let port = url.port_or_known_default()?;
    Some(format!("{host}:{port}"))
}

const BINDING_GRPC: &str = "GRPC";
const BINDING_JSONRPC: &str = "JSONRPC";

/// The top-level fields of a message: number and raw bytes (key included).
fn fields(mut message: &[u8]) -> Option<Vec<(u32, &[u8])>> {
    let mut out = Vec::new();
    while !message.is_empty() {
        let start = message;
        let (number, wire) = decode_key(&mut message).ok()?;
        match wire {
            WireType::Varint => {
                decode_varint(&mut message).ok()?;
            }
            WireType::SixtyFourBit => message = message.get(8..)?,
            WireType::ThirtyTwoBit => message = message.get(4..)?,
            WireType::LengthDelimited => {
                let length = usize::try_from(decode_varint(&mut message).ok()?).ok()?;
                message = message.get(length..)?;
            }
            // Groups are proto2's; no A2A message has them.
            WireType::StartGroup | WireType::EndGroup => return None,
        }
        let used = start.len() - message.len();
        out.push((number, start.get(..used)?));
    }
    Some(out)
}

/// The payload of a length-delimited field's raw bytes.
fn payload(mut raw: &[u8]) -> Option<&[u8]> {
    decode_key(&mut raw).ok()?;
    let length = usize::try_from(decode_varint(&mut raw).ok()?).ok()?;
    (raw.remaining() == length).then_some(raw)
}

fn put_message(out: &mut Vec<u8>, number: u32, message: &impl prost::Message) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(message.encoded_len() as u64, out);
    message.encode_raw(out);
}

fn put_text(out: &mut Vec<u8>, number: u32, text: &str) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(text.len() as u64, out);
    out.extend_from_slice(text.as_bytes());
}

/// A 1.0 `AgentCard`: its interfaces become the gateway's JSON-RPC 1.0
/// endpoint, and each gRPC one the gateway's gRPC address (or nothing,
/// where gRPC cannot reach the agent through the gateway). `None`: the
/// bytes are no message.
pub fn rewrite_v10(card: &[u8], at: &GatewayAddresses<'_>) -> Option<Vec<u8>> {
    const INTERFACES: u32 = 3;
    const SIGNATURES: u32 = 13;
    let mut out = Vec::with_capacity(card.len());
    let mut grpc = Vec::new();
    for (number, raw) in fields(card)? {
        match number {
            INTERFACES => {
                let iface = v10::AgentInterface::decode(payload(raw)?).ok()?;
                if iface.protocol_binding.eq_ignore_ascii_case(BINDING_GRPC) {
                    grpc.push(iface);
                }
            }
            SIGNATURES => {}
            _ => out.extend_from_slice(raw),
        }
    }
    let json_rpc = v10::AgentInterface {
        url: at.json_rpc.to_owned(),
        protocol_binding: BINDING_JSONRPC.to_owned(),
        protocol_version: "1.0".to_owned(),
        ..v10::AgentInterface::default()
    };
    put_message(&mut out, INTERFACES, &json_rpc);
    if let Some(address) = at.grpc {
        for mut iface in grpc {
            iface.url = address.to_owned();
            put_message(&mut out, INTERFACES, &iface);
        }
    }
    Some(out)
}

/// A 0.3 `AgentCard`: its `url` and preferred transport become the
/// gateway's JSON-RPC endpoint; its additional interfaces that endpoint
/// and, for gRPC, the gateway's gRPC address.
pub fn rewrite_v03(card: &[u8], at: &GatewayAddresses<'_>) -> Option<Vec<u8>> {
    const URL: u32 = 3;
    const PREFERRED_TRANSPORT: u32 = 14;
    const ADDITIONAL_INTERFACES: u32 = 15;
    const SIGNATURES: u32 = 17;
    let mut out = Vec::with_capacity(card.len());
    let mut grpc = false;
    for (number, raw) in fields(card)? {
        match number {
            PREFERRED_TRANSPORT => {
                let transport = std::str::from_utf8(payload(raw)?).ok()?;
                grpc |= transport.eq_ignore_ascii_case(BINDING_GRPC);
            }
            ADDITIONAL_INTERFACES => {
                let iface = v03::AgentInterface::decode(payload(raw)?).ok()?;
                grpc |= iface.transport.eq_ignore_ascii_case(BINDING_GRPC);
            }
            URL | SIGNATURES => {}
            _ => out.extend_from_slice(raw),
        }
    }
    put_text(&mut out, URL, at.json_rpc);
    put_text(&mut out, PREFERRED_TRANSPORT, BINDING_JSONRPC);
    let json_rpc = v03::AgentInterface {
        url: at.json_rpc.to_owned(),
        transport: BINDING_JSONRPC.to_owned(),
    };
    put_message(&mut out, ADDITIONAL_INTERFACES, &json_rpc);
    if let (true, Some(address)) = (grpc, at.grpc) {
        let iface = v03::AgentInterface {
            url: address.to_owned(),
            transport: BINDING_GRPC.to_owned(),
        };
        put_message(&mut out, ADDITIONAL_INTERFACES, &iface);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(url: &str, binding: &str, version: &str) -> v10::AgentInterface {
        v10::AgentInterface {
            url: url.to_owned(),
            protocol_binding: binding.to_owned(),
            protocol_version: version.to_owned(),
            tenant: String::new(),
        }
    }

    #[test]
    fn a_1_0_card_names_the_gateway_and_keeps_what_it_does_not_read() {
        let card = v10::AgentCard {
            name: "dice".to_owned(),
            supported_interfaces: vec![
                iface("10.0.0.7:50051", "GRPC", "1.0"),
                iface("10.0.0.7:50051", "GRPC", "0.3"),
                iface("http://10.0.0.7:8000/", "JSONRPC", "1.0"),
            ],
            ..v10::AgentCard::default()
        };
        let mut bytes = card.encode_to_vec();
        // Fields the gateway's type does not have: security_schemes (8),
        // and a signature (13); they must pass and go respectively.
        put_text(&mut bytes, 8, "opaque scheme bytes");
        put_text(&mut bytes, 13, "signature");
        let at = GatewayAddresses {
            json_rpc: "http://gw:8080/",
            grpc: Some("gw:8080"),
        };
        let out = rewrite_v10(&bytes, &at).unwrap();
        let read = v10::AgentCard::decode(out.as_slice()).unwrap();
        assert_eq!(read.name, "dice");
        assert_eq!(
            read.supported_interfaces,
            vec![
                iface("http://gw:8080/", "JSONRPC", "1.0"),
                iface("gw:8080", "GRPC", "1.0"),
                iface("gw:8080", "GRPC", "0.3"),
            ]
        );
        let numbers: Vec<u32> = fields(&out).unwrap().iter().map(|f| f.0).collect();
        assert!(numbers.contains(&8));
        assert!(!numbers.contains(&13));
        assert!(!String::from_utf8_lossy(&out).contains("10.0.0.7"));
        // A named agent: no gRPC address to give.
        let at = GatewayAddresses {
            json_rpc: "http://gw:8080/v1/agents/dice/",
            grpc: None,
        };
        let read = v10::AgentCard::decode(rewrite_v10(&bytes, &at).unwrap().as_slice()).unwrap();
        assert_eq!(read.supported_interfaces.len(), 1);
    }

    #[test]
    fn a_0_3_card_names_the_gateway() {
        let card = v03::AgentCard {
            name: "dice".to_owned(),
            url: "10.0.0.7:50051".to_owned(),
            preferred_transport: "GRPC".to_owned(),
            additional_interfaces: vec![v03::AgentInterface {
                url: "10.0.0.7:50051".to_owned(),
                transport: "GRPC".to_owned(),
            }],
            ..v03::AgentCard::default()
        };
        let at = GatewayAddresses {
            json_rpc: "http://gw:8080/",
            grpc: Some("gw:8080"),
        };
        let out = rewrite_v03(&card.encode_to_vec(), &at).unwrap();
        let read = v03::AgentCard::decode(out.as_slice()).unwrap();
        assert_eq!(read.name, "dice");
        assert_eq!(read.url, "http://gw:8080/");
        assert_eq!(read.preferred_transport, "JSONRPC");
        assert_eq!(read.additional_interfaces.len(), 2);
        assert_eq!(read.additional_interfaces[1].url, "gw:8080");
        assert!(!String::from_utf8_lossy(&out).contains("10.0.0.7"));
    }

    #[test]
    fn bytes_that_are_no_message_are_refused_not_panicked_on() {
        let at = GatewayAddresses {
            json_rpc: "http://gw/",
            grpc: None,
        };
        for bytes in [
            &[0x1a, 0x7f, 0x00][..],
            &[0xff; 11],
            &[0x0b],
            &[0x1a, 0x02, 0xff, 0xff],
        ] {
            assert!(rewrite_v10(bytes, &at).is_none(), "{bytes:?}");
        }
        assert!(rewrite_v03(&[0x72, 0x01, 0xff], &at).is_none());
    }

    #[test]
    fn the_grpc_address_is_the_roots_only() {
        assert_eq!(
            grpc_address("http://127.0.0.1:8080", "").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            grpc_address("https://gw.example.com", "").as_deref(),
            Some("gw.example.com:443")
        );
        assert_eq!(grpc_address("http://gw:8080", "/v1/agents/x"), None);
        assert_eq!(grpc_address("https://gw.example.com/prefix", ""), None);
    }
}
