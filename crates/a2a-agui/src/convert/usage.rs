//! The run's token usage: what the agent reported, counted once per model
//! call and summed per provider and model.
//!
//! Agents report usage in two ways, and a run may mix them:
//! - per call: each call's counts once (ADK's events, an OpenAI-style
//!   response). A report equal to the last one for the same model is the
//!   same call repeated (ADK's closing artifact repeats its last message);
//!   one with the same input and no smaller count is the same call still
//!   streaming (Gemini's chunks, Anthropic's `message_delta`) and replaces
//!   it; anything else is another call, added.
//! - as a running total of the run: a report on a Task snapshot or a final
//!   status (Mastra, VoltAgent), or under a key that says so
//!   (`accumulated_usage`). The largest such report stands.
//!
//! Each count of an entry is the larger of the calls' sum and the running
//! total: a total covers the calls it sums, and calls reported beside a
//! total are not counted twice. The task's total on the snapshot that opens
//! a continuation is the turns before: later totals count from it.

use crate::convert::AguiVersion;
use crate::event::custom::{Custom, UsageNotice};
use crate::event::{Event, TokenUsage};
use crate::read::{Carrier, Item, MAX_COUNT, Parts, Reading, item_readings};

/// How many provider and model pairs one run keeps apart; usage of any
/// further pair is counted under an entry that names neither, each report
/// added (a repeat of the last aside).
pub(super) const MAX_MODELS: usize = 16;

#[derive(Debug, Default)]
pub(super) struct Usage {
    entries: Vec<Entry>,
}

#[derive(Debug, Default)]
struct Entry {
    provider: Option<String>,
    model: Option<String>,
    /// The per-call reports, summed.
    calls: Counts,
    /// The last per-call report: a repeat of it, or its growth, is no new call.
    last: Option<Counts>,
    /// The largest running total reported.
    total: Counts,
    /// The running total before this run (a continuation's opening task).
    before: Counts,
    /// Takes the reports of more pairs than `MAX_MODELS`.
    merged: bool,
    /// The last report a merged entry took, and whose it was.
    merged_last: Option<(Option<String>, Option<String>, Counts)>,
}

/// The counts of one report or sum; absent when never reported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts([Option<u64>; 6]);

// Where each count sits in `Counts`, in `Counts::of`'s order.
const INPUT: usize = 0;
const OUTPUT: usize = 1;
const TOTAL: usize = 2;
const REASONING: usize = 3;
const CACHED: usize = 4;
const CACHE_WRITE: usize = 5;

impl Counts {
    fn of(usage: &TokenUsage) -> Counts {
        Counts([
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
            usage.reasoning_tokens,
            usage.cached_input_tokens,
            usage.cache_write_input_tokens,
        ])
    }

    fn zip(self, other: Counts, f: impl Fn(Option<u64>, Option<u64>) -> Option<u64>) -> Counts {
        let mut out = Counts::default();
        for (i, slot) in out.0.iter_mut().enumerate() {
            *slot = f(self.0[i], other.0[i]);
        }
        out
    }

    fn plus(self, other: Counts) -> Counts {
        self.zip(other, |a, b| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0)).min(MAX_COUNT)),
        })
    }

    fn minus(self, other: Counts) -> Counts {
        self.zip(other, |a, b| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_sub(b)),
            (a, _) => a,
        })
    }

    fn max(self, other: Counts) -> Counts {
        self.zip(other, |a, b| a.max(b))
    }

    /// Every count at least the other's, none dropped.
    fn covers(&self, other: &Counts) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| a >= b)
    }
}

impl Entry {
    /// The larger of the calls' sum and this run's part of the running
    /// total.
    fn figures(&self) -> Counts {
        self.calls.max(self.total.minus(self.before))
    }
}

impl Usage {
    /// Reads the usage an item reports, if any; `opening`: the run's first
    /// item.
    #[inline]
    pub(super) fn observe(&mut self, item: &Item<'_>, opening: bool) {
        // The hot path: a plain chunk from the fast reader has no metadata
        // that may hold usage.
        if let Item::Artifact(chunk) = item
            && chunk.event_metadata.is_none()
            && matches!(chunk.parts, Parts::Plain(_))
        {
            return;
        }
        item_readings(item, opening, &mut |reading, carrier| {
            self.add(reading, carrier);
        });
    }

    fn add(&mut self, reading: Reading, carrier: Carrier) {
        let Reading { usage, cumulative } = reading;
        let counts = Counts::of(&usage);
        let pair = (usage.provider, usage.model);
        let entry = self.entry(pair.0.clone(), pair.1.clone());
        if entry.merged {
            // Several pairs share the entry: each report is added, but for
            // a pair repeating its last one.
            let report = Some((pair.0, pair.1, counts));
            if entry.merged_last != report {
                entry.calls = entry.calls.plus(counts);
                entry.merged_last = report;
            }
            return;
        }
        // A key that says it is a running total makes any call's report one.
        let carrier = match carrier {
            Carrier::Call if cumulative => Carrier::Summary,
            other => other,
        };
        match carrier {
            Carrier::Past => {
                entry.before = entry.before.max(counts);
                return;
            }
            Carrier::Summary => {
                entry.total = entry.total.max(counts);
                return;
            }
            Carrier::Call => {}
        }
        match entry.last {
            Some(last) if last == counts => return,
            Some(last) if last.0[INPUT] == counts.0[INPUT] && counts.covers(&last) => {
                entry.calls = entry.calls.minus(last).plus(counts);
            }
            _ => entry.calls = entry.calls.plus(counts),
        }
        entry.last = Some(counts);
    }

    /// The entry of a provider and model (past `MAX_MODELS` pairs, the
    /// merged one).
    fn entry(&mut self, provider: Option<String>, model: Option<String>) -> &mut Entry {
        let found = self
            .entries
            .iter()
            .position(|e| e.provider == provider && e.model == model);
        let index = match found {
            Some(index) => index,
            None if self.entries.len() < MAX_MODELS => {
                self.entries.push(Entry {
                    provider,
                    model,
                    ..Entry::default()
                });
                self.entries.len() - 1
            }
            // Full: the nameless entry, else the last one, loses its name
            // and takes every further pair.
            None => {
                let index = self
                    .entries
                    .iter()
                    .position(|e| e.provider.is_none() && e.model.is_none())
                    .unwrap_or(self.entries.len() - 1);
                let entry = &mut self.entries[index];
                if !entry.merged {
                    entry.calls = entry.figures();
                    entry.provider = None;
                    entry.model = None;
                    entry.total = Counts::default();
                    entry.before = Counts::default();
                    entry.last = None;
                    entry.merged = true;
                }
                index
            }
        };
        &mut self.entries[index]
    }

    /// The run's usage so far, one entry per provider and model, in the
    /// order they were first reported.
    pub(super) fn entries(&self) -> Vec<TokenUsage> {
        self.entries
            .iter()
            .map(|entry| {
                let c = entry.figures().0;
                let total = match (c[INPUT], c[OUTPUT]) {
                    (Some(i), Some(o)) => Some(i.saturating_add(o).min(MAX_COUNT)),
                    _ => c[TOTAL],
                };
                TokenUsage {
                    provider: entry.provider.clone(),
                    model: entry.model.clone(),
                    input_tokens: c[INPUT],
                    output_tokens: c[OUTPUT],
                    total_tokens: total,
                    reasoning_tokens: c[REASONING],
                    cached_input_tokens: c[CACHED],
                    cache_write_input_tokens: c[CACHE_WRITE],
                }
            })
            .collect()
    }

    /// The usage for the run's terminal event: on it for a 1.0 client;
    /// for an older one as `CUSTOM a2a.usage` before it, in `out`.
    pub(super) fn for_terminal(
        &self,
        version: AguiVersion,
        out: &mut Vec<Event>,
    ) -> Option<Vec<TokenUsage>> {
        if self.entries.is_empty() {
            return None;
        }
        let usage = self.entries();
        match version {
            AguiVersion::V1 => Some(usage),
            AguiVersion::Legacy => {
                out.push(Event::Custom(Custom::Usage(UsageNotice { usage })));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(input: u64, output: u64, model: Option<&str>, cumulative: bool) -> Reading {
        Reading {
            usage: TokenUsage {
                model: model.map(str::to_owned),
                input_tokens: Some(input),
                output_tokens: Some(output),
                total_tokens: Some(input + output),
                ..TokenUsage::default()
            },
            cumulative,
        }
    }

    fn totals(usage: &Usage) -> Vec<(Option<String>, Option<u64>, Option<u64>)> {
        usage
            .entries()
            .into_iter()
            .map(|e| (e.model, e.input_tokens, e.output_tokens))
            .collect()
    }

    #[test]
    fn calls_add_repeats_do_not_and_a_streaming_call_replaces_itself() {
        let mut usage = Usage::default();
        usage.add(reading(100, 20, None, false), Carrier::Call);
        usage.add(reading(100, 20, None, false), Carrier::Call); // the same report again
        usage.add(reading(150, 5, None, false), Carrier::Call); // a second call
        usage.add(reading(150, 30, None, false), Carrier::Call); // ... still streaming
        assert_eq!(totals(&usage), vec![(None, Some(250), Some(50))]);
    }

    #[test]
    fn a_running_total_covers_the_calls_it_sums() {
        let mut usage = Usage::default();
        usage.add(reading(100, 20, Some("m"), false), Carrier::Call);
        usage.add(reading(150, 30, Some("m"), false), Carrier::Call);
        // The run's total, on the closing Task, as some frameworks add it.
        usage.add(reading(250, 50, Some("m"), false), Carrier::Summary);
        assert_eq!(
            totals(&usage),
            vec![(Some("m".into()), Some(250), Some(50))]
        );
        // Running totals repeated as the run goes: the largest stands.
        let mut running = Usage::default();
        running.add(reading(100, 20, None, true), Carrier::Call);
        running.add(reading(250, 50, None, true), Carrier::Call);
        assert_eq!(totals(&running), vec![(None, Some(250), Some(50))]);
    }

    #[test]
    fn models_are_kept_apart_up_to_the_bound() {
        let mut usage = Usage::default();
        for i in 0..40u64 {
            usage.add(reading(1, 1, Some(&format!("m{i}")), false), Carrier::Call);
        }
        let entries = usage.entries();
        assert_eq!(entries.len(), MAX_MODELS);
        assert_eq!(
            TokenUsage::total_of(&entries),
            80,
            "nothing lost past the bound"
        );
        assert!(entries.last().unwrap().model.is_none());
    }

    #[test]
    fn a_continuation_counts_the_running_total_from_where_the_task_stood() {
        let mut usage = Usage::default();
        // The task's total after the turns before, on the opening snapshot.
        usage.add(reading(300, 60, None, false), Carrier::Past);
        assert!(usage.entries()[0].input_tokens.is_none_or(|n| n == 0));
        usage.add(reading(420, 90, None, false), Carrier::Summary);
        assert_eq!(totals(&usage), vec![(None, Some(120), Some(30))]);
    }

    #[test]
    fn past_the_bound_each_report_is_added_once_and_running_totals_are_kept() {
        let mut usage = Usage::default();
        usage.add(reading(5, 5, None, true), Carrier::Call); // a nameless running total
        for i in 0..20u64 {
            usage.add(reading(1, 1, Some(&format!("m{i}")), false), Carrier::Call);
            usage.add(reading(1, 1, Some(&format!("m{i}")), false), Carrier::Call); // repeated
        }
        let entries = usage.entries();
        assert_eq!(entries.len(), MAX_MODELS);
        // 15 named entries, the nameless one with its total and the 5 others.
        assert_eq!(TokenUsage::total_of(&entries), 10 + 2 * 20);
    }

    #[test]
    fn only_a_1_0_client_gets_usage_on_the_terminal_event() {
        let mut usage = Usage::default();
        let mut out = Vec::new();
        assert_eq!(usage.for_terminal(AguiVersion::V1, &mut out), None);
        usage.add(reading(3, 4, None, false), Carrier::Call);
        let on_event = usage.for_terminal(AguiVersion::V1, &mut out).unwrap();
        assert_eq!(on_event[0].total_tokens, Some(7));
        assert!(out.is_empty());
        assert_eq!(usage.for_terminal(AguiVersion::Legacy, &mut out), None);
        assert!(matches!(&out[..], [Event::Custom(Custom::Usage(_))]));
    }
}
