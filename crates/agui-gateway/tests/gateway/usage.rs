//! Token usage from real A2A servers to real AG-UI clients (issue 40):
//! a2a-sdk 1.3.0 and @a2a-js/sdk play streams whose usage is shaped like
//! ADK's (two model calls, thoughts, cached input), Mastra's (the run's
//! total, nested) and OpenAI's (beside a model); `@ag-ui/client` 1.0.0
//! reads `RUN_FINISHED.usage` in AG-UI's accounting, 0.0.59 and 0.0.48
//! verify the same runs (with `CUSTOM a2a.usage`), and
//! `agui_gateway_tokens_total` sums to the same figures.

use serde_json::{Value, json};

use crate::run_client;
use crate::support::{agent, gateway_for, metrics_of};

/// Each scenario and the usage a 1.0 client must read.
fn scenarios() -> [(&'static str, Value); 3] {
    [
        (
            "usage-adk",
            // Input 120 + 260 (the 100 cached are part of it); output is
            // candidates plus thoughts: 30 + 50 + 40 + 10. The closing
            // artifact repeats the last call's usage: not counted again.
            json!([{ "inputTokens": 380, "outputTokens": 130, "totalTokens": 510,
                "reasoningTokens": 60, "cachedInputTokens": 100 }]),
        ),
        (
            "usage-mastra",
            json!([{ "inputTokens": 20, "outputTokens": 5, "totalTokens": 25 }]),
        ),
        (
            "usage-openai",
            // completion_tokens include the reasoning, prompt_tokens the cache.
            json!([{ "provider": "openai", "model": "gpt-4o-mini", "inputTokens": 100,
                "outputTokens": 40, "totalTokens": 140, "reasoningTokens": 25, "cachedInputTokens": 60 }]),
        ),
    ]
}

fn event(run: &Value, pick: impl Fn(&Value) -> bool) -> Option<&Value> {
    run["events"].as_array()?.iter().find(|e| pick(e))
}

/// The sum of the `agui_gateway_tokens_total` series in `metrics` (the
/// exposition text) whose labels include each of `labels` (`kind="input"`).
pub(crate) fn tokens_counted(metrics: &str, labels: &[&str]) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("agui_gateway_tokens_total{"))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn usage_shaped_like_adk_mastra_and_openai_reaches_every_client_and_the_metric() {
    for name in ["python-v1", "js-v1"] {
        let agent = agent(name);
        let gw = gateway_for(&agent.url(), &[]);
        let url = format!("{}/agui", gw.url());
        for (scenario, usage) in scenarios() {
            let run = run_client("1.0.0", &url, &["--message", scenario]);
            assert_eq!(run["ok"], true, "{name} {scenario}: {run}");
            let finished = event(&run, |e| e["type"] == "RUN_FINISHED").expect("RUN_FINISHED");
            assert_eq!(finished["usage"], usage, "{name} {scenario}: {finished}");
            assert!(event(&run, |e| e["name"] == "a2a.usage").is_none());
            for version in ["0.0.59", "0.0.48"] {
                let run = run_client(version, &url, &["--message", scenario]);
                assert_eq!(run["ok"], true, "{name} {scenario} {version}: {run}");
                let custom = event(&run, |e| e["name"] == "a2a.usage").expect("CUSTOM a2a.usage");
                assert_eq!(custom["value"]["usage"], usage, "{name} {version}");
            }
        }
        // Three runs of each scenario (one per client), in AG-UI's accounting.
        let metrics = metrics_of(&gw).await;
        for (model, kind, each) in [
            ("unknown", "input", 380 + 20),
            ("unknown", "output", 130 + 5),
            ("unknown", "reasoning", 60),
            ("unknown", "cached_input", 100),
            ("gpt-4o-mini", "input", 100),
            ("gpt-4o-mini", "output", 40),
            ("gpt-4o-mini", "reasoning", 25),
            ("gpt-4o-mini", "cached_input", 60),
        ] {
            let (model_is, kind_is) = (format!("model=\"{model}\""), format!("kind=\"{kind}\""));
            let counted = tokens_counted(&metrics, &[&model_is, &kind_is]);
            assert_eq!(counted, 3 * each, "{name}: {model} {kind}");
        }
    }
}
