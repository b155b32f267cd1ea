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
//! total are not counted twice.

use crate::convert::AguiVersion;
use crate::event::custom::{Custom, UsageNotice};
use crate::event::{Event, TokenUsage};
use crate::read::{Item, MAX_COUNT, Parts, Reading, item_readings};

/// How many provider and model pairs one run keeps apart; usage of any
/// further pair is counted under an entry that names neither.
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
}

/// The counts of one report or sum; absent when never reported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts([Option<u64>; 6]);

const INPUT: usize = 0;
const OUTPUT: usize = 1;
const TOTAL: usize = 2;

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

impl Usage {
    /// Reads the usage an item reports, if any.
    #[inline]
    pub(super) fn observe(&mut self, item: &Item<'_>) {
        // The hot path: a plain chunk from the fast reader has no metadata
        // that may hold usage.
        if let Item::Artifact(chunk) = item
            && chunk.event_metadata.is_none()
            && matches!(chunk.parts, Parts::Plain(_))
        {
            return;
        }
        item_readings(item, &mut |reading, summary| self.add(reading, summary));
    }

    fn add(&mut self, reading: Reading, summary: bool) {
        let Reading { usage, cumulative } = reading;
        let counts = Counts::of(&usage);
        let (entry, merged) = self.entry(usage.provider, usage.model);
        if merged {
            // Several models share the entry: no report repeats another.
            entry.calls = entry.calls.plus(counts);
            entry.last = None;
            return;
        }
        if summary || cumulative {
            entry.total = entry.total.max(counts);
            return;
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

    /// The entry of a provider and model, and whether it is the one that
    /// takes every pair past `MAX_MODELS`.
    fn entry(&mut self, provider: Option<String>, model: Option<String>) -> (&mut Entry, bool) {
        let found = self
            .entries
            .iter()
            .position(|e| e.provider == provider && e.model == model);
        let full = found.is_none() && self.entries.len() >= MAX_MODELS;
        let index = match found {
            Some(index) => index,
            None if !full => {
                self.entries.push(Entry {
                    provider,
                    model,
                    ..Entry::default()
                });
                self.entries.len() - 1
            }
            // Full: the nameless entry (the last place is kept for it).
            None => match self
                .entries
                .iter()
                .position(|e| e.provider.is_none() && e.model.is_none())
            {
                Some(index) => index,
                None => {
                    let last = self.entries.len() - 1;
                    self.entries[last].provider = None;
                    self.entries[last].model = None;
                    last
                }
            },
        };
        (&mut self.entries[index], full)
    }

    /// The run's usage so far, one entry per provider and model, in the
    /// order they were first reported.
    pub(super) fn entries(&self) -> Vec<TokenUsage> {
        self.entries
            .iter()
            .map(|entry| {
                let c = entry.calls.max(entry.total).0;
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
                    reasoning_tokens: c[3],
                    cached_input_tokens: c[4],
                    cache_write_input_tokens: c[5],
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
        usage.add(reading(100, 20, None, false), false);
        usage.add(reading(100, 20, None, false), false); // the same report again
        usage.add(reading(150, 5, None, false), false); // a second call
        usage.add(reading(150, 30, None, false), false); // ... still streaming
        assert_eq!(totals(&usage), vec![(None, Some(250), Some(50))]);
    }

    #[test]
    fn a_running_total_covers_the_calls_it_sums() {
        let mut usage = Usage::default();
        usage.add(reading(100, 20, Some("m"), false), false);
        usage.add(reading(150, 30, Some("m"), false), false);
        // The run's total, on the closing Task, as some frameworks add it.
        usage.add(reading(250, 50, Some("m"), false), true);
        assert_eq!(
            totals(&usage),
            vec![(Some("m".into()), Some(250), Some(50))]
        );
        // Running totals repeated as the run goes: the largest stands.
        let mut running = Usage::default();
        running.add(reading(100, 20, None, true), false);
        running.add(reading(250, 50, None, true), false);
        assert_eq!(totals(&running), vec![(None, Some(250), Some(50))]);
    }

    #[test]
    fn models_are_kept_apart_up_to_the_bound() {
        let mut usage = Usage::default();
        for i in 0..40u64 {
            usage.add(reading(1, 1, Some(&format!("m{i}")), false), false);
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
    fn only_a_1_0_client_gets_usage_on_the_terminal_event() {
        let mut usage = Usage::default();
        let mut out = Vec::new();
        assert_eq!(usage.for_terminal(AguiVersion::V1, &mut out), None);
        usage.add(reading(3, 4, None, false), false);
        let on_event = usage.for_terminal(AguiVersion::V1, &mut out).unwrap();
        assert_eq!(on_event[0].total_tokens, Some(7));
        assert!(out.is_empty());
        assert_eq!(usage.for_terminal(AguiVersion::Legacy, &mut out), None);
        assert!(matches!(&out[..], [Event::Custom(Custom::Usage(_))]));
    }
}
