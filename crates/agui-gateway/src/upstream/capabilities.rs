//! The AG-UI 1.0 `AgentCapabilities` of an agent as the gateway fronts it:
//! read from its A2A card (0.3 and 1.0 alike, by shape) and from what the
//! gateway itself does for every agent (SSE to the client, frontend tools,
//! resumes from the journal, interrupts when configured).
//!
//! A card is the agent's word and may be hostile: at most `MAX_LISTED`
//! skills, modes and extensions are read, short fields past `MAX_SHORT`
//! bytes and URLs past `MAX_URL` are left out, descriptions are cut to a
//! few KiB. What the card does not say is omitted (AG-UI: omitted means
//! unknown), never `null`.

use serde_json::{Map, Value, json};

/// Skills, modes and extensions read from a card, each.
pub const MAX_LISTED: usize = 64;
/// Names, ids, versions, media types: longer ones are left out.
const MAX_SHORT: usize = 256;
/// URLs (documentation, extension URIs): longer ones are left out.
const MAX_URL: usize = 2048;
/// The agent's description is cut here…
const MAX_DESCRIPTION: usize = 4096;
/// …and each skill's here.
const MAX_SKILL_DESCRIPTION: usize = 1024;

/// What the gateway adds for every agent it fronts, whatever its card.
#[derive(Debug, Clone, Copy)]
pub struct Fronted {
    /// `interrupts = true` for the agent: a run waiting for input ends with
    /// AG-UI's interrupt outcome.
    pub interrupts: bool,
    /// The journal is on: a client continues a cut stream with
    /// `Last-Event-ID`.
    pub resumable: bool,
}

/// The capabilities of the agent whose card is `card`, fronted as `fronted`.
pub fn derive(card: &Value, fronted: Fronted) -> Value {
    let mut capabilities = Map::new();
    let mut put = |key: &str, value: Map<String, Value>| {
        if !value.is_empty() {
            capabilities.insert(key.to_owned(), Value::Object(value));
        }
    };
    put("identity", identity(card));
    put("transport", transport(fronted));
    put("tools", tools(card));
    let output = modes(&card["defaultOutputModes"]);
    let input = modes(&card["defaultInputModes"]);
    let mut shown = Map::new();
    if let Some(output) = &output {
        shown.insert("supportedMimeTypes".to_owned(), json!(output));
    }
    put("output", shown);
    let mut multimodal = Map::new();
    if let Some(input) = &input {
        multimodal.insert("input".to_owned(), Value::Object(accepted(input)));
    }
    if let Some(output) = &output {
        let any = |prefix: &str| output.iter().any(|mode| is_kind(mode, prefix));
        multimodal.insert(
            "output".to_owned(),
            json!({ "image": any("image/"), "audio": any("audio/") }),
        );
    }
    put("multimodal", multimodal);
    // Any A2A agent may ask for input (`input-required`); the gateway
    // continues the waiting task with the client's next message.
    put(
        "humanInTheLoop",
        json_map(json!({ "supported": true, "interrupts": fronted.interrupts })),
    );
    let extensions: Vec<&str> = listed(&card["capabilities"]["extensions"])
        .filter_map(|extension| uri(&extension["uri"], &["http", "https", "urn"]))
        .collect();
    if !extensions.is_empty() {
        put("custom", json_map(json!({ "a2a.extensions": extensions })));
    }
    Value::Object(capabilities)
}

fn json_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn identity(card: &Value) -> Map<String, Value> {
    let mut identity = Map::new();
    let fields = [
        ("name", short(&card["name"])),
        ("description", cut(&card["description"], MAX_DESCRIPTION)),
        ("version", short(&card["version"])),
        ("provider", short(&card["provider"]["organization"])),
        (
            "documentationUrl",
            uri(&card["documentationUrl"], &["http", "https"]),
        ),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            identity.insert(key.to_owned(), json!(value));
        }
    }
    identity
}

/// The client always gets SSE from the gateway, from an agent that
/// streams or one it polls; it sends no webhooks.
fn transport(fronted: Fronted) -> Map<String, Value> {
    json_map(json!({
        "streaming": true,
        "pushNotifications": false,
        "resumable": fronted.resumable,
    }))
}

/// The card's skills as the agent's own tools (a skill is asked for in a
/// message, so no argument schema is claimed), and the client's tools,
/// which the gateway passes on (`RunAgentInput.tools`).
fn tools(card: &Value) -> Map<String, Value> {
    let items: Vec<Value> = listed(&card["skills"])
        .filter_map(|skill| {
            let title = short(&skill["name"]);
            let name = short(&skill["id"]).or(title)?;
            let description = cut(&skill["description"], MAX_SKILL_DESCRIPTION)
                .or(title)
                .unwrap_or_default();
            let mut item = json!({ "name": name, "description": description });
            if let Some(title) = title.filter(|title| *title != name) {
                item["metadata"] = json!({ "title": title });
            }
            Some(item)
        })
        .collect();
    let mut tools = Map::new();
    if !items.is_empty() {
        tools.insert("items".to_owned(), Value::Array(items));
    }
    tools.insert("clientProvided".to_owned(), Value::Bool(true));
    tools
}

/// A card's media types, when it lists them.
fn modes(value: &Value) -> Option<Vec<&str>> {
    value.as_array()?;
    Some(listed(value).filter_map(short).collect())
}

/// What a user message may carry, from the agent's input modes.
fn accepted(modes: &[&str]) -> Map<String, Value> {
    let any = |kind: &dyn Fn(&str) -> bool| modes.iter().any(|mode| kind(mode));
    let pdf = |mode: &str| mode == "*/*" || mode.eq_ignore_ascii_case("application/pdf");
    // Files of a kind no other part covers (text and JSON are the text
    // and data parts).
    let file = |mode: &str| {
        mode == "*/*"
            || !(["text/", "image/", "audio/", "video/"]
                .iter()
                .any(|prefix| is_kind(mode, prefix))
                || pdf(mode)
                || mode.eq_ignore_ascii_case("application/json"))
    };
    json_map(json!({
        "image": any(&|mode| is_kind(mode, "image/")),
        "audio": any(&|mode| is_kind(mode, "audio/")),
        "video": any(&|mode| is_kind(mode, "video/")),
        "pdf": any(&pdf),
        "file": any(&file),
    }))
}

/// `mode` is of the top-level type `prefix` (`image/`), or any type.
fn is_kind(mode: &str, prefix: &str) -> bool {
    mode == "*/*"
        || mode
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// The first `MAX_LISTED` entries of a list (none when it is not one).
fn listed(value: &Value) -> impl Iterator<Item = &Value> {
    value
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .take(MAX_LISTED)
}

/// A non-empty string of at most `MAX_SHORT` bytes.
fn short(value: &Value) -> Option<&str> {
    value
        .as_str()
        .filter(|text| !text.trim().is_empty() && text.len() <= MAX_SHORT)
}

/// A non-empty string, cut to `max` bytes on a character boundary.
fn cut(value: &Value, max: usize) -> Option<&str> {
    let text = value.as_str().filter(|text| !text.trim().is_empty())?;
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(&text[..end])
}

/// A URI of one of `schemes` of at most `MAX_URL` bytes: a client may
/// show it as a link.
fn uri<'a>(value: &'a Value, schemes: &[&str]) -> Option<&'a str> {
    let text = value.as_str().filter(|text| text.len() <= MAX_URL)?;
    let parsed = url::Url::parse(text).ok()?;
    schemes.contains(&parsed.scheme()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRONTED: Fronted = Fronted {
        interrupts: false,
        resumable: true,
    };

    #[test]
    fn a_0_3_card_is_read() {
        let card = json!({
            "name": "Demo", "description": "Answers.", "url": "http://a.example/",
            "version": "1.2.0", "protocolVersion": "0.3.0",
            "provider": { "organization": "Example Org", "url": "https://example.org" },
            "documentationUrl": "https://docs.example.org/demo",
            "capabilities": { "streaming": false, "pushNotifications": true, "extensions": [
                { "uri": "https://a2a.example/ext/v1", "required": false }, { "uri": 7 } ] },
            "defaultInputModes": ["text/plain", "image/png", "application/pdf"],
            "defaultOutputModes": ["text/plain", "application/json"],
            "skills": [
                { "id": "weather", "name": "Weather", "description": "Tells the weather", "tags": ["demo"] },
                { "name": "Only a name" },
                { "description": "no name: left out" }
            ]
        });
        assert_eq!(
            derive(&card, FRONTED),
            json!({
                "identity": { "name": "Demo", "description": "Answers.", "version": "1.2.0",
                    "provider": "Example Org", "documentationUrl": "https://docs.example.org/demo" },
                "transport": { "streaming": true, "pushNotifications": false, "resumable": true },
                "tools": { "items": [
                    { "name": "weather", "description": "Tells the weather", "metadata": { "title": "Weather" } },
                    { "name": "Only a name", "description": "Only a name" }
                ], "clientProvided": true },
                "output": { "supportedMimeTypes": ["text/plain", "application/json"] },
                "multimodal": {
                    "input": { "image": true, "audio": false, "video": false, "pdf": true, "file": false },
                    "output": { "image": false, "audio": false }
                },
                "humanInTheLoop": { "supported": true, "interrupts": false },
                "custom": { "a2a.extensions": ["https://a2a.example/ext/v1"] }
            })
        );
    }

    #[test]
    fn a_1_0_card_is_read() {
        let card = json!({
            "name": "Agent", "description": "A 1.0 agent.",
            "supportedInterfaces": [{ "url": "http://a.example/", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0" }],
            "provider": { "url": "https://example.org", "organization": "Org" },
            "version": "2", "capabilities": { "streaming": true, "extensions": [
                { "uri": "urn:example:ext" } ] },
            "defaultInputModes": ["audio/wav", "video/mp4", "application/zip"],
            "defaultOutputModes": ["image/png", "audio/mpeg"],
            "skills": [{ "id": "s", "name": "s", "description": "Does s",
                "tags": [], "securityRequirements": [] }]
        });
        let fronted = Fronted {
            interrupts: true,
            resumable: false,
        };
        let capabilities = derive(&card, fronted);
        assert_eq!(
            capabilities["identity"],
            json!({ "name": "Agent", "description": "A 1.0 agent.", "version": "2", "provider": "Org" })
        );
        assert_eq!(capabilities["transport"]["resumable"], json!(false));
        assert_eq!(
            capabilities["tools"]["items"],
            json!([{ "name": "s", "description": "Does s" }])
        );
        assert_eq!(
            capabilities["multimodal"],
            json!({
                "input": { "image": false, "audio": true, "video": true, "pdf": false, "file": true },
                "output": { "image": true, "audio": true }
            })
        );
        assert_eq!(
            capabilities["humanInTheLoop"],
            json!({ "supported": true, "interrupts": true })
        );
        assert_eq!(
            capabilities["custom"],
            json!({ "a2a.extensions": ["urn:example:ext"] })
        );
    }

    /// What a card does not say is omitted, never `null`: a card with
    /// nothing but wrong types gives what the gateway itself does.
    #[test]
    fn what_the_card_does_not_say_is_omitted() {
        let card = json!({ "name": 3, "description": "  ", "provider": "Org",
            "documentationUrl": "javascript:alert(1)", "skills": { "id": "x" },
            "defaultInputModes": "text/plain", "capabilities": { "extensions": {} } });
        assert_eq!(
            derive(&card, FRONTED),
            json!({
                "transport": { "streaming": true, "pushNotifications": false, "resumable": true },
                "tools": { "clientProvided": true },
                "humanInTheLoop": { "supported": true, "interrupts": false }
            })
        );
    }

    #[test]
    fn a_hostile_card_is_read_within_bounds() {
        let long = "x".repeat(1 << 20);
        let skill_description = "y".repeat(8 << 10);
        let skills: Vec<Value> = (0..10_000)
            .map(|i| json!({ "id": format!("s{i}"), "description": skill_description }))
            .collect();
        let modes: Vec<Value> = (0..10_000).map(|i| json!(format!("image/x{i}"))).collect();
        let extensions: Vec<Value> = (0..10_000)
            .map(|i| json!({ "uri": format!("https://e.example/{i}") }))
            .collect();
        let card = json!({
            "name": long, "version": long, "description": format!("é{long}"),
            "provider": { "organization": long },
            "documentationUrl": format!("https://d.example/{long}"),
            "skills": skills, "defaultOutputModes": modes, "defaultInputModes": [long],
            "capabilities": { "extensions": extensions }
        });
        let capabilities = derive(&card, FRONTED);
        let identity = capabilities["identity"].as_object().unwrap();
        assert_eq!(identity.keys().collect::<Vec<_>>(), ["description"]);
        let description = identity["description"].as_str().unwrap();
        assert!(description.len() <= MAX_DESCRIPTION && description.starts_with('é'));
        let items = capabilities["tools"]["items"].as_array().unwrap();
        assert_eq!(items.len(), MAX_LISTED);
        assert!(
            items.iter().all(|item| {
                item["description"].as_str().unwrap().len() == MAX_SKILL_DESCRIPTION
            })
        );
        let shown = &capabilities["output"]["supportedMimeTypes"];
        assert_eq!(shown.as_array().unwrap().len(), MAX_LISTED);
        assert_eq!(
            capabilities["custom"]["a2a.extensions"]
                .as_array()
                .unwrap()
                .len(),
            MAX_LISTED
        );
        // A mode past the bound is not read: nothing is accepted.
        assert_eq!(capabilities["multimodal"]["input"]["file"], json!(false));
        assert!(serde_json::to_vec(&capabilities).unwrap().len() < 128 << 10);
    }
}
