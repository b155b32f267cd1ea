//! Token usage, read by shape wherever an agent puts it in metadata (of
//! the event, the task, a message or a part), in AG-UI 1.0's accounting.
//!
//! Artifact metadata is not read: it describes the artifact and comes
//! again with each of its chunks.
//!
//! A usage object is an object under a key that says `usage` (`usage`,
//! `adk_usage_metadata`, `usageMetadata`, `token_usage`, Mastra's
//! `execution.usage`, …) within three levels of the metadata, or
//! OpenTelemetry's flat `gen_ai.usage.*` attributes. Its counts are read by
//! key family, snake or camel case, flat or in `*_details`:
//! - input: `input_tokens`, `prompt_tokens`, `prompt_token_count`;
//! - output: `output_tokens`, `completion_tokens`; Gemini's
//!   `candidates_token_count`, which leaves the thoughts out;
//! - reasoning: `reasoning_tokens`, `thoughts_token_count`, details'
//!   `reasoning`;
//! - cached input: `cached_input_tokens`, `cached_tokens`,
//!   `cached_content_token_count`, `cache_read_*`;
//! - cache writes: `cache_write_*`, `cache_creation_*`;
//! - totals: `total_tokens`, `total_token_count`.
//!
//! The model and provider are read beside the counts or beside the usage
//! object (`model`, `model_version`, `gen_ai.response.model`, `provider`,
//! `gen_ai.system`). A usage object under a key that says it is a running
//! total (`accumulated_usage`, `totalUsage`, `cumulative…`) is marked so.
//!
//! AG-UI counts reasoning in the output and cache reads and writes in the
//! input. A part is added into its total when the agent's convention keeps
//! it apart: Gemini's candidates, Anthropic's `cache_*_input_tokens` beside
//! `input_tokens`, a part larger than its total, or a provider total that
//! only adds up with the part added.

use serde_json::Value;

use super::json::{Object, metadata};
use super::{Item, MessageView, Parts};
use crate::event::TokenUsage;
use crate::state::TaskState;

/// Counts above this do not survive a round trip through a JSON number.
pub(crate) const MAX_COUNT: u64 = (1 << 53) - 1;
/// How many members of one metadata object are looked at, nested ones
/// included: metadata is the agent's, and so is its size.
const MAX_MEMBERS: usize = 256;
/// How deep below the metadata a usage object is looked for.
const MAX_DEPTH: u8 = 3;
/// A model or provider name longer than this is not kept.
pub(crate) const MAX_LABEL_BYTES: usize = 128;

/// One report of usage, in AG-UI's accounting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Provider, model and counts.
    pub usage: TokenUsage,
    /// The key said it is a running total of the run.
    pub cumulative: bool,
}

/// Whether a key may say `usage` as `walk` reads keys (its ASCII letters
/// and digits, lower-cased): what the fast reader checks before it leaves
/// metadata unread. An escape could spell the word, so any says maybe.
pub(crate) fn may_say_usage(key: &str) -> bool {
    const WORD: &[u8; 5] = b"usage";
    let mut matched = 0;
    for &byte in key.as_bytes() {
        if byte == b'\\' {
            return true;
        }
        if !byte.is_ascii_alphanumeric() {
            continue;
        }
        let byte = byte.to_ascii_lowercase();
        if byte == WORD[matched] {
            matched += 1;
            if matched == WORD.len() {
                return true;
            }
        } else {
            matched = usize::from(byte == WORD[0]);
        }
    }
    false
}

/// What an item's usage stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// One model call's (event, message or part metadata).
    Call,
    /// The run's so far: a Task snapshot's or a final status's metadata.
    Summary,
    /// Before this run: the task's own metadata on the snapshot that opens
    /// a continuation (the task waited for the user).
    Past,
}

/// Every usage report an item carries, and what it stands for. `opening`:
/// the item is the run's first.
pub(crate) fn item_readings(item: &Item<'_>, opening: bool, f: &mut impl FnMut(Reading, Carrier)) {
    match item {
        Item::Task(view) | Item::Status(view) => {
            let waiting = matches!(
                view.status.state,
                TaskState::InputRequired | TaskState::AuthRequired
            );
            let carrier = match item {
                Item::Task(_) if opening && waiting => Carrier::Past,
                Item::Task(_) => Carrier::Summary,
                _ if view.status.state.is_final() => Carrier::Summary,
                _ => Carrier::Call,
            };
            if let Some(meta) = view.metadata {
                readings(meta, &mut |r| f(r, carrier));
            }
            // A status message's own usage is its model call's.
            if let Some(message) = &view.status.message
                && carrier != Carrier::Past
            {
                message_readings(message, &mut |r| f(r, Carrier::Call));
            }
        }
        Item::Message(message) => message_readings(message, &mut |r| f(r, Carrier::Call)),
        Item::Artifact(chunk) => {
            let mut each = |r| f(r, Carrier::Call);
            if let Some(meta) = &chunk.event_metadata {
                readings(meta, &mut each);
            }
            // Not the artifact's own metadata: it describes the artifact,
            // and is repeated with every chunk of it.
            parts_readings(chunk.parts, &mut each);
        }
        Item::ArtifactWithoutBody { .. } | Item::Error(_) | Item::Acp { .. } | Item::Unknown(_) => {
        }
    }
}

fn message_readings(message: &MessageView<'_>, f: &mut impl FnMut(Reading)) {
    // The user's message, echoed: its metadata is the caller's to write.
    if message.user_echo.is_some() {
        return;
    }
    if let Some(meta) = message.metadata {
        readings(meta, f);
    }
    parts_readings(message.parts, f);
}

fn parts_readings(parts: Parts<'_>, f: &mut impl FnMut(Reading)) {
    // Plain parts come from the fast reader, which leaves parts whose
    // metadata may hold usage to the lenient one.
    for part in parts.values().iter().filter_map(Value::as_object) {
        if let Some(meta) = metadata(part) {
            readings(meta, f);
        }
    }
}

/// Every usage report in `meta`.
pub(crate) fn readings(meta: &Object, f: &mut impl FnMut(Reading)) {
    let mut budget = MAX_MEMBERS;
    walk(meta, 0, &mut budget, f);
}

fn walk(object: &Object, depth: u8, budget: &mut usize, f: &mut impl FnMut(Reading)) {
    if let Some(usage) = open_telemetry(object) {
        f(Reading {
            usage,
            cumulative: false,
        });
    }
    for (key, value) in object {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Value::Object(inner) = value else {
            continue;
        };
        let name = normalized(key);
        if name.contains("usage")
            && let Some(usage) = usage_object(inner, object)
        {
            let cumulative = ["accumulated", "cumulative", "total", "aggregate"]
                .iter()
                .any(|word| name.contains(word));
            f(Reading { usage, cumulative });
        } else if depth + 1 < MAX_DEPTH {
            walk(inner, depth + 1, budget, f);
        }
    }
}

/// A key lower-cased, with only its letters and digits.
fn normalized(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .take(64)
        .collect()
}

/// What one count means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Input,
    /// Input beside the prompt, never part of it (Gemini's tool-use prompt).
    InputBeside,
    Output,
    /// Output without the reasoning (Gemini's candidates).
    OutputLessReasoning,
    Reasoning,
    Cached,
    CacheWrite,
    /// Anthropic's spelling: kept apart from `input_tokens`.
    CachedBeside,
    CacheWriteBeside,
    Total,
}

fn family(name: &str) -> Option<Family> {
    use Family::*;
    Some(match name {
        "inputtokens" | "prompttokens" | "prompttokencount" | "inputtokencount" => Input,
        "tooluseprompttokencount" | "tooluseprompttokens" => InputBeside,
        "outputtokens" | "completiontokens" | "outputtokencount" | "completiontokencount" => Output,
        "candidatestokencount" | "candidatestokens" => OutputLessReasoning,
        "reasoningtokens"
        | "reasoningtokencount"
        | "thoughtstokencount"
        | "thoughtstokens"
        | "reasoning" => Reasoning,
        "cachedinputtokens"
        | "cachedtokens"
        | "cachedcontenttokencount"
        | "cachereadtokens"
        | "cacheread"
        | "cachedinputtokencount" => Cached,
        "cachewriteinputtokens"
        | "cachewritetokens"
        | "cachecreationtokens"
        | "cachecreation"
        | "cachewrite" => CacheWrite,
        "cachereadinputtokens" => CachedBeside,
        "cachecreationinputtokens" => CacheWriteBeside,
        "totaltokens" | "totaltokencount" => Total,
        _ => return None,
    })
}

/// The counts of one usage object, as sent.
#[derive(Default)]
struct Sent {
    input: Option<u64>,
    input_beside: Option<u64>,
    output: Option<u64>,
    output_less_reasoning: Option<u64>,
    reasoning: Option<u64>,
    cached: Option<u64>,
    cache_write: Option<u64>,
    cached_beside: Option<u64>,
    cache_write_beside: Option<u64>,
    total: Option<u64>,
}

impl Sent {
    fn slot(&mut self, family: Family) -> &mut Option<u64> {
        match family {
            Family::Input => &mut self.input,
            Family::InputBeside => &mut self.input_beside,
            Family::Output => &mut self.output,
            Family::OutputLessReasoning => &mut self.output_less_reasoning,
            Family::Reasoning => &mut self.reasoning,
            Family::Cached => &mut self.cached,
            Family::CacheWrite => &mut self.cache_write,
            Family::CachedBeside => &mut self.cached_beside,
            Family::CacheWriteBeside => &mut self.cache_write_beside,
            Family::Total => &mut self.total,
        }
    }

    /// Reads the counts of `object`; a details object's only where the
    /// level above gave none (the top level is read first).
    fn read(&mut self, object: &Object, details: bool) {
        let mut nested = Vec::new();
        for (key, value) in object.iter().take(MAX_MEMBERS) {
            let name = normalized(key);
            match value {
                Value::Object(inner) if !details && name.ends_with("details") => nested.push(inner),
                _ => {
                    if let (Some(family), Some(count)) = (family(&name), count(value)) {
                        let slot = self.slot(family);
                        if slot.is_none() {
                            *slot = Some(count);
                        }
                    }
                }
            }
        }
        for inner in nested {
            self.read(inner, true);
        }
    }

    fn is_empty(&self) -> bool {
        [
            self.input,
            self.input_beside,
            self.output,
            self.output_less_reasoning,
            self.reasoning,
            self.cached,
            self.cache_write,
            self.cached_beside,
            self.cache_write_beside,
            self.total,
        ]
        .iter()
        .all(Option::is_none)
    }

    /// The counts in AG-UI's accounting.
    fn accounted(self) -> TokenUsage {
        let cached = self.cached.or(self.cached_beside);
        let cache_write = self.cache_write.or(self.cache_write_beside);
        let cache = add(cached, cache_write);
        let beside = self.cached_beside.is_some() || self.cache_write_beside.is_some();
        let mut input = add(self.input, self.input_beside);
        let reasoning = self.reasoning;
        // Parts kept apart by the agent's convention, or that cannot be
        // parts of what was sent, or that only make the agent's total add
        // up when added.
        let sent_total = self.total;
        let adds_up = |base: u64, extra: Option<u64>| match (sent_total, extra) {
            (Some(total), Some(extra)) => {
                extra > 0 && total != base && total == base.saturating_add(extra)
            }
            _ => false,
        };
        // The output first (Gemini's candidates leave the thoughts out)...
        let output = if self.output_less_reasoning.is_some() {
            add(self.output_less_reasoning, reasoning)
        } else if self.output.is_some()
            && (reasoning > self.output || adds_up(add(input, self.output).unwrap_or(0), reasoning))
        {
            add(self.output, reasoning)
        } else {
            self.output
        };
        // ... then the input, against the output as settled.
        let base = add(input, output).unwrap_or(0);
        if input.is_some() && (beside || cache > input || adds_up(base, cache)) {
            input = add(input, cache);
        }
        let total = match (input, output) {
            (Some(i), Some(o)) => Some(i.saturating_add(o).min(MAX_COUNT)),
            _ => self.total,
        };
        TokenUsage {
            provider: None,
            model: None,
            input_tokens: input,
            output_tokens: output,
            total_tokens: total,
            reasoning_tokens: reasoning,
            cached_input_tokens: cached,
            cache_write_input_tokens: cache_write,
        }
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0)).min(MAX_COUNT)),
    }
}

/// A count: a non-negative integer (as a number, an integral float or a
/// string of digits, as proto3 JSON writes an int64), at most `MAX_COUNT`.
fn count(value: &Value) -> Option<u64> {
    let n = match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| {
                    f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f <= MAX_COUNT as f64
                })
                .map(|f| f as u64)
        })?,
        Value::String(s)
            if !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.parse().ok()?
        }
        _ => return None,
    };
    (n <= MAX_COUNT).then_some(n)
}

/// The usage object's counts with its model and provider, read in it or
/// beside it; `None` when it holds no count.
fn usage_object(usage: &Object, beside: &Object) -> Option<TokenUsage> {
    let mut sent = Sent::default();
    sent.read(usage, false);
    if sent.is_empty() {
        return None;
    }
    let mut accounted = sent.accounted();
    accounted.model = label(usage, is_model_key).or_else(|| label(beside, is_model_key));
    accounted.provider = label(usage, is_provider_key).or_else(|| label(beside, is_provider_key));
    Some(accounted)
}

/// OpenTelemetry's GenAI attributes, flat in one object.
fn open_telemetry(object: &Object) -> Option<TokenUsage> {
    if !object
        .keys()
        .take(MAX_MEMBERS)
        .any(|k| k.starts_with("gen_ai.usage."))
    {
        return None;
    }
    let mut sent = Sent::default();
    for (key, value) in object.iter().take(MAX_MEMBERS) {
        let Some(rest) = key.strip_prefix("gen_ai.usage.") else {
            continue;
        };
        let name = normalized(rest);
        // The semantic conventions count cache reads and writes in the
        // input, whatever they are called.
        let family = match family(&name) {
            Some(Family::CachedBeside) => Some(Family::Cached),
            Some(Family::CacheWriteBeside) => Some(Family::CacheWrite),
            other => other,
        };
        if let (Some(family), Some(count)) = (family, count(value)) {
            *sent.slot(family) = Some(count);
        }
    }
    if sent.is_empty() {
        return None;
    }
    let mut accounted = sent.accounted();
    accounted.model = label(object, is_model_key);
    accounted.provider = label(object, is_provider_key);
    Some(accounted)
}

fn is_model_key(name: &str) -> bool {
    matches!(
        name,
        "model"
            | "modelname"
            | "modelid"
            | "modelversion"
            | "genairesponsemodel"
            | "genairequestmodel"
    ) || name.ends_with("modelversion")
        || name.ends_with("modelname")
}

fn is_provider_key(name: &str) -> bool {
    matches!(
        name,
        "provider" | "providername" | "modelprovider" | "genaisystem" | "genaiprovidername"
    )
}

/// The first string member whose key `matches`, if it is a label worth
/// keeping: not empty, at most `MAX_LABEL_BYTES`, no control characters.
fn label(object: &Object, matches: fn(&str) -> bool) -> Option<String> {
    // The response's model names what served the call; prefer it.
    let mut found: Option<&str> = None;
    for (key, value) in object.iter().take(MAX_MEMBERS) {
        let name = normalized(key);
        if !matches(&name) {
            continue;
        }
        let Some(text) = value.as_str() else { continue };
        if text.is_empty() || text.len() > MAX_LABEL_BYTES || text.chars().any(char::is_control) {
            continue;
        }
        if found.is_none() || name == "genairesponsemodel" {
            found = Some(text);
        }
    }
    found.map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(meta: Value) -> Vec<Reading> {
        let mut out = Vec::new();
        readings(meta.as_object().unwrap(), &mut |r| out.push(r));
        out
    }

    fn one(meta: Value) -> TokenUsage {
        let mut all = read(meta);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0).usage
    }

    #[test]
    fn gemini_thoughts_are_added_to_the_output_and_cached_stays_in_the_input() {
        let usage = one(json!({"adk_usage_metadata": {
            "prompt_token_count": 120, "candidates_token_count": 30,
            "thoughts_token_count": 50, "cached_content_token_count": 100,
            "total_token_count": 200}}));
        assert_eq!(usage.input_tokens, Some(120));
        assert_eq!(usage.output_tokens, Some(80));
        assert_eq!(usage.reasoning_tokens, Some(50));
        assert_eq!(usage.cached_input_tokens, Some(100));
        assert_eq!(usage.total_tokens, Some(200));
        // Gemini's own JSON spelling.
        let camel = one(json!({"kagent_usage_metadata": {
            "promptTokenCount": 120, "candidatesTokenCount": 30, "thoughtsTokenCount": 50}}));
        assert_eq!(camel.output_tokens, Some(80));
    }

    #[test]
    fn openai_reasoning_and_cache_details_are_parts_not_additions() {
        let usage = one(json!({"model": "gpt-4o", "usage": {
            "prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140,
            "prompt_tokens_details": {"cached_tokens": 60},
            "completion_tokens_details": {"reasoning_tokens": 25}}}));
        assert_eq!(usage.model.as_deref(), Some("gpt-4o"));
        assert_eq!(usage.input_tokens, Some(100));
        assert_eq!(usage.output_tokens, Some(40));
        assert_eq!(usage.reasoning_tokens, Some(25));
        assert_eq!(usage.cached_input_tokens, Some(60));
        assert_eq!(usage.total_tokens, Some(140));
    }

    #[test]
    fn anthropic_cache_counts_are_added_to_the_input() {
        let usage = one(json!({"usage": {"input_tokens": 10, "output_tokens": 5,
            "cache_read_input_tokens": 200, "cache_creation_input_tokens": 30},
            "model": "claude-x", "provider": "anthropic"}));
        assert_eq!(usage.input_tokens, Some(240));
        assert_eq!(usage.cached_input_tokens, Some(200));
        assert_eq!(usage.cache_write_input_tokens, Some(30));
        assert_eq!(usage.total_tokens, Some(245));
        assert_eq!(usage.provider.as_deref(), Some("anthropic"));
    }

    #[test]
    fn langchain_and_ai_sdk_totals_pass_as_they_are() {
        let lc = one(
            json!({"usage_metadata": {"input_tokens": 50, "output_tokens": 20,
            "total_tokens": 70, "input_token_details": {"cache_read": 10, "cache_creation": 5},
            "output_token_details": {"reasoning": 8}}}),
        );
        assert_eq!((lc.input_tokens, lc.output_tokens), (Some(50), Some(20)));
        assert_eq!(
            (lc.cached_input_tokens, lc.cache_write_input_tokens),
            (Some(10), Some(5))
        );
        assert_eq!(lc.reasoning_tokens, Some(8));
        // VoltAgent (AI SDK v4 names) and AI SDK v6's details.
        let volt = one(json!({"finishReason": "stop", "usage": {"promptTokens": 10,
            "completionTokens": 3, "totalTokens": 13, "cachedInputTokens": 0, "reasoningTokens": 0}}));
        assert_eq!(
            (volt.input_tokens, volt.output_tokens, volt.total_tokens),
            (Some(10), Some(3), Some(13))
        );
        let v6 = one(json!({"usage": {"inputTokens": 9, "outputTokens": 4,
            "inputTokenDetails": {"cacheReadTokens": 2, "cacheWriteTokens": 1},
            "outputTokenDetails": {"reasoningTokens": 3}}}));
        assert_eq!(
            (
                v6.cached_input_tokens,
                v6.cache_write_input_tokens,
                v6.reasoning_tokens
            ),
            (Some(2), Some(1), Some(3))
        );
        assert_eq!(v6.total_tokens, Some(13));
    }

    #[test]
    fn mastra_nested_usage_and_open_telemetry_attributes() {
        let mastra = one(json!({"execution": {"toolCalls": [], "usage":
            {"inputTokens": 20, "outputTokens": 5, "totalTokens": 25}, "finishReason": "stop"}}));
        assert_eq!(mastra.total_tokens, Some(25));
        let otel = one(
            json!({"gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3,
            "gen_ai.request.model": "m-req", "gen_ai.response.model": "m-resp", "gen_ai.system": "openai"}),
        );
        assert_eq!(otel.total_tokens, Some(10));
        assert_eq!(otel.model.as_deref(), Some("m-resp"));
        assert_eq!(otel.provider.as_deref(), Some("openai"));
    }

    #[test]
    fn running_totals_are_marked() {
        let all = read(
            json!({"accumulated_usage": {"inputTokens": 1, "outputTokens": 1},
            "usage": {"inputTokens": 1}}),
        );
        assert_eq!(all.len(), 2);
        assert!(all[0].cumulative);
        assert!(!all[1].cumulative);
    }

    #[test]
    fn hostile_usage_reads_as_nothing_or_bounded() {
        // No count: no reading. Negative, fractional, huge or non-numeric counts are no counts.
        assert!(read(json!({"usage": {"note": "x"}})).is_empty());
        assert!(
            read(json!({"usage": {"inputTokens": -1, "outputTokens": 1.5,
            "totalTokens": 1e300, "promptTokens": "12a"}}))
            .is_empty()
        );
        let big = one(json!({"usage": {"inputTokens": MAX_COUNT, "outputTokens": MAX_COUNT}}));
        assert_eq!(big.total_tokens, Some(MAX_COUNT));
        assert_eq!(
            one(json!({"usage": {"inputTokens": "42"}})).input_tokens,
            Some(42)
        );
        // A label too long or with control characters is dropped.
        let usage =
            one(json!({"usage": {"inputTokens": 1, "model": "x".repeat(500), "provider": "a\nb"}}));
        assert_eq!((usage.model, usage.provider), (None, None));
        // Deeper than three levels, or past the member budget, is not looked at.
        assert!(read(json!({"a": {"b": {"c": {"usage": {"inputTokens": 1}}}}})).is_empty());
        let mut wide = serde_json::Map::new();
        for i in 0..300 {
            wide.insert(format!("k{i:03}"), json!(i));
        }
        wide.insert("zz_usage".into(), json!({"inputTokens": 1}));
        assert!(read(Value::Object(wide)).is_empty());
    }

    #[test]
    fn gemini_cached_input_equal_to_the_output_is_not_added_again() {
        let usage = one(json!({"usage_metadata": {"prompt_token_count": 120,
            "candidates_token_count": 30, "thoughts_token_count": 50,
            "cached_content_token_count": 80, "total_token_count": 200}}));
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (Some(120), Some(80))
        );
        assert_eq!(usage.total_tokens, Some(200));
    }

    #[test]
    fn the_fast_reader_check_sees_every_spelling() {
        for key in [
            "adk_usage_metadata",
            "UsageMetadata",
            "u_sage",
            "Us-Age",
            "u\u{200b}sage",
            "uusage",
            "\\u0075sage",
        ] {
            assert!(may_say_usage(key), "{key}");
            let mut meta = serde_json::Map::new();
            meta.insert(key.to_owned(), json!({"inputTokens": 1}));
            // What the lenient reader finds, the check says maybe to.
            if !key.starts_with('\\') {
                assert_eq!(read(Value::Object(meta)).len(), 1, "{key}");
            }
        }
        for key in ["source", "chunkIndex", "usag", "u-s-a-g"] {
            assert!(!may_say_usage(key), "{key}");
        }
    }
}
