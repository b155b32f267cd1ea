//! Taking over a run whose replica died (its lease lapsed): the converter
//! is rebuilt by feeding it the input the shared journal recorded (its
//! output is thrown away: the journal has it), then the run re-attaches
//! to the agent's task and goes on writing the journal, from the next
//! frame number on. Only a replica that won the lease gets here. The
//! taken-over run is detached like any other: it goes on while the
//! followers on this replica (the log's listeners) or a reconnect come
//! within `detach_grace_secs`, else it is abandoned (and cancelled, as
//! `cancel_on_disconnect` says).

use std::sync::Arc;
use std::time::Duration;

use a2a_agui::{AguiVersion, Options, OutputFormat, SequentialIds, StreamConverter};
use agui_journal::redis::{RedisJournal, RemoteRun};
use agui_journal::{InputOp, RunLog};

use super::redis_run::RedisRun;
use super::{Conversion, RelayState, Run, Source};
use crate::state::AppState;
use crate::upstream::outbound::Forwarded;

/// `log` counts the followers on this replica (the one that took the
/// lease holds it).
pub async fn take_over(
    state: Arc<AppState>,
    journal: Arc<RedisJournal>,
    remote: RemoteRun,
    log: Arc<RunLog>,
) {
    let key = remote.key.clone();
    match rebuild(&state, &journal, remote, log.clone()).await {
        Some(relay) => {
            tracing::info!(run = key, "took over a run whose replica went away");
            relay.pump(log).await;
        }
        None => {
            if let Err(err) = journal.release(&key).await {
                tracing::warn!(run = key, "releasing a run's lease failed: {err}");
            }
        }
    }
}

async fn rebuild(
    state: &AppState,
    journal: &Arc<RedisJournal>,
    remote: RemoteRun,
    log: Arc<RunLog>,
) -> Option<RelayState> {
    let key = remote.key;
    let spec = remote.spec;
    let Ok(agent) = state.named(&spec.agent) else {
        tracing::warn!(
            run = key,
            agent = spec.agent,
            "cannot take over a run of an agent this replica does not have"
        );
        return None;
    };
    let permit = state.stream_permit(agent.name()).ok()?;
    let entries = match journal.all_entries(&key).await {
        Ok(entries) => entries,
        Err(err) => {
            tracing::warn!(run = key, "reading the run to take it over failed: {err}");
            return None;
        }
    };
    if entries.last().is_none_or(|e| e.terminal) {
        // Ended, or never wrote a frame (its replica died before the
        // agent answered): nothing to continue.
        return None;
    }
    let options = Options {
        thread_id: spec.thread_id,
        run_id: spec.run_id,
        interrupts: spec.interrupts,
        version: if spec.v1 {
            AguiVersion::V1
        } else {
            AguiVersion::Legacy
        },
        client_tools: spec.client_tools,
        state: spec.state,
    };
    let format = OutputFormat::parse(&spec.format).unwrap_or(agent.config.format);
    let max_event_bytes = state.config.limits.max_event_bytes;
    let mut stream = StreamConverter::new(
        options.clone(),
        SequentialIds::tagged(spec.id_tag),
        format,
        max_event_bytes,
    )
    .with_event_ids(key.clone());
    let mut scratch = Vec::new();
    let mut last = 0;
    for entry in &entries {
        let replayed = InputOp::replay(&entry.input, |op, bytes| {
            scratch.clear();
            let _ = match op {
                InputOp::Sse => stream.feed_sse(bytes, None, &mut scratch),
                InputOp::Json => stream.feed_json(bytes, None, &mut scratch),
                InputOp::Reattach => {
                    stream.reattach();
                    Ok(())
                }
            };
        });
        if replayed.is_none() {
            tracing::warn!(
                run = key,
                "the run's recorded input is malformed: not taking it over"
            );
            return None;
        }
        last = entry.last;
    }
    if stream.last_event_number() != last {
        // Some input was not recorded (too large): the rebuilt converter
        // may differ; numbering goes on after what the journal has.
        tracing::warn!(
            run = key,
            rebuilt = stream.last_event_number(),
            journaled = last,
            "the rebuilt run differs from the journal"
        );
    }
    stream.number_events_after(last);
    if stream.is_finished() || stream.converter().reattach_task().is_none() {
        return None;
    }
    let mut forwarded = Forwarded::restore(&agent, &spec.headers);
    // The agent's token is this replica's to get (the journal keeps
    // none). A token exchange needs the caller's token, which is never
    // journaled either: such a run goes on without one, and the agent's
    // 401 ends it.
    if let Some(reason) = agent.untrusted().await {
        tracing::warn!(
            run = key,
            "not taking over a run of an agent whose card does not verify: {reason}"
        );
        return None;
    }
    if let Err(err) = forwarded.authorize(&agent).await {
        tracing::warn!(
            run = key,
            "no token for the agent of a run taken over: {err}"
        );
    }
    let run = Run {
        forwarded,
        agent,
        conversion: Conversion {
            options,
            format,
            on_end: None,
            on_delivered: None,
            on_usage: None,
            access: None,
            // An inspector run taken over goes on without its tap: the
            // page reads AG-UI events alone after a reconnect.
            tap: false,
        },
        keepalive: state.config.keepalive,
        max_event_bytes,
        shutdown: state.shutdown.clone(),
        metrics: state.metrics.clone(),
        log: Some(log),
        // A grace of zero would end it at once: followers come through
        // Redis, a moment after the takeover.
        detach_grace: state
            .config
            .journal
            .detach_grace
            .max(Duration::from_secs(1)),
        permit,
    };
    let limit = 2 * state.config.journal.limits.max_run_bytes;
    let shared = RedisRun::held(journal.clone(), &key, None, last + 1, limit);
    let mut relay = RelayState::new(run, stream, Source::Lost, Some(shared));
    relay.published = last;
    // A polled run is read on as it was (its mode journaled, whatever this
    // replica's card of the agent says now).
    relay.polled = spec.poll.and_then(|memo| serde_json::from_value(memo).ok());
    Some(relay)
}
