//! What a gRPC agent sends, read by the gateway: a card rewritten on the
//! wire, stream items written as the converter's JSON, a status's details
//! read as an A2A error. Whatever the bytes: no panic; a rewritten card's
//! interfaces are only the gateway's and it carries no signature.

use a2a_grpc::cards::{GatewayAddresses, rewrite_v03, rewrite_v10};
use a2a_grpc::{json, status, v03, v10, write};
use prost::Message as _;

const JSON_RPC: &str = "http://gw.test:8080/";
const GRPC: &str = "gw.test:8080";

/// A rewritten card reads field by field, and `signatures` never stays.
fn reads_field_by_field(out: &[u8], signatures: u32) {
    let mut rest = out;
    while !rest.is_empty() {
        let Ok((number, wire)) = prost::encoding::decode_key(&mut rest) else {
            panic!("the rewrite wrote a key that does not read");
        };
        assert_ne!(number, signatures, "a signature stayed");
        let skipped = prost::encoding::skip_field(
            wire,
            number,
            &mut rest,
            prost::encoding::DecodeContext::default(),
        );
        assert!(
            skipped.is_ok(),
            "the rewrite wrote a field that does not read"
        );
    }
}

pub fn check(data: &[u8]) {
    let Some((&choice, bytes)) = data.split_first() else {
        return;
    };
    let at = GatewayAddresses {
        json_rpc: JSON_RPC,
        grpc: (choice & 0x80 != 0).then_some(GRPC),
    };
    match choice % 6 {
        0 => {
            if let Some(out) = rewrite_v10(bytes, &at) {
                reads_field_by_field(&out, 13);
                if let Ok(card) = v10::AgentCard::decode(out.as_slice()) {
                    for iface in card.supported_interfaces {
                        assert!(iface.url == JSON_RPC || iface.url == GRPC, "{iface:?}");
                    }
                }
            }
        }
        1 => {
            if let Some(out) = rewrite_v03(bytes, &at) {
                reads_field_by_field(&out, 17);
                if let Ok(card) = v03::AgentCard::decode(out.as_slice()) {
                    assert_eq!(card.url, JSON_RPC);
                    for iface in card.additional_interfaces {
                        assert!(iface.url == JSON_RPC || iface.url == GRPC, "{iface:?}");
                    }
                }
            }
        }
        2 => {
            if let Ok(item) = v10::StreamResponse::decode(bytes) {
                // The frame a run's converter reads: one `data:` line of
                // JSON-RPC whose result is the item's JSON.
                let wrapped = write::stream_value(&item);
                match write::frame(&serde_json::json!(1), &item) {
                    Some(frame) => {
                        let text = std::str::from_utf8(&frame).expect("UTF-8");
                        let line = text.strip_prefix("data: ").expect("a data line");
                        let line = line.strip_suffix("\n\n").expect("one frame");
                        assert!(!line.contains('\n'), "{line:?}");
                        let read: serde_json::Value = serde_json::from_str(line).expect("JSON");
                        assert_eq!(Some(&read["result"]), wrapped.as_ref());
                    }
                    None => assert!(wrapped.is_none()),
                }
            }
        }
        3 => {
            if let Ok(item) = v03::StreamResponse::decode(bytes) {
                let _ = json::stream_v03(&item).map(|v| v.to_string());
            }
        }
        4 => {
            if let Ok(card) = v10::AgentCard::decode(bytes) {
                let _ = json::card_v10(&card).to_string();
            }
            if let Ok(card) = v03::AgentCard::decode(bytes) {
                let _ = json::card_v03(&card).to_string();
            }
        }
        _ => {
            let message = String::from_utf8_lossy(bytes.get(..32).unwrap_or(bytes));
            let details = bytes.get(32..).unwrap_or_default().to_vec();
            let code = tonic::Code::from(i32::from(choice));
            let got = status::classify(&tonic::Status::with_details(code, message, details.into()));
            let _ = got.0.json_rpc_code();
        }
    }
}
