//! `agui-gateway`: the binary edge. Parses the command line and hands off
//! to a command: serving (`cli::serve`), `demo`, `convert`, `check-config`.
//! The flags and what they set are the library's (`config::flags`).
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;

use agui_gateway::config::Config;
use agui_gateway::config::flags::{CorsArgs, LogArgs, ServeArgs};
use agui_gateway::obs::logging::LogFormat as Log;
use anyhow::Context;
use clap::{Parser, Subcommand};

mod cli {
    pub mod convert;
    pub mod demo;
    pub mod reload;
    pub mod serve;
}

#[derive(Debug, Parser)]
#[command(
    name = "agui-gateway",
    version,
    about = "Re-streams A2A agents as AG-UI events over SSE",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway in front of a built-in demo A2A agent.
    Demo {
        /// Address to listen on.
        #[arg(long, env = "AGUI_GATEWAY_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Milliseconds between the demo agent's events.
        #[arg(long, default_value_t = 150)]
        delay_ms: u64,
        /// Serve HTTPS (HTTP/2 by ALPN) with a self-signed certificate made at start and printed once.
        #[arg(long)]
        tls: bool,
        #[command(flatten)]
        cors: CorsArgs,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Convert a recorded upstream A2A body (SSE capture, JSON Lines or one
    /// JSON document) into the AG-UI SSE body the gateway would send.
    Convert {
        /// Output format: `agui` (official AG-UI) or `hector` (the seed's named events).
        #[arg(long, visible_alias = "dialect", default_value = "agui")]
        format: String,
        /// RUN_STARTED.threadId (default: the first item's contextId).
        #[arg(long)]
        thread_id: Option<String>,
        /// RUN_STARTED.runId (default: the first item's taskId).
        #[arg(long)]
        run_id: Option<String>,
        /// End input-required runs with an AG-UI interrupt outcome.
        #[arg(long)]
        interrupts: bool,
        /// The recording; `-` or nothing reads standard input.
        file: Option<PathBuf>,
    },
    /// Check a configuration file; errors name their line.
    CheckConfig { file: PathBuf },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Convert {
            format,
            thread_id,
            run_id,
            interrupts,
            file,
        }) => cli::convert::convert(&format, thread_id, run_id, interrupts, file.as_deref()),
        Some(Command::CheckConfig { file }) => {
            let path = file.display().to_string();
            let config = Config::load(&path)?;
            println!(
                "{path}: ok ({} agents, listen {})",
                config.agents.len(),
                config.listen
            );
            Ok(())
        }
        Some(Command::Demo {
            listen,
            delay_ms,
            tls,
            cors,
            log,
        }) => {
            let log = log.log_format;
            logged(log, || {
                run_to_exit(
                    runtime(None)?,
                    cli::demo::demo(listen, delay_ms, tls, cors, log),
                )
            })
        }
        None => {
            let workers = cli.serve.workers;
            let log = cli.serve.log.log_format;
            logged(log, || {
                // A reload reads the configuration as this start does.
                let again = cli.serve.clone();
                let reload = cli::reload::Reload {
                    watched: again.config.clone(),
                    // Before the start reads it: a change after is reloaded.
                    read_at_start: cli::reload::digest(again.config.as_ref()),
                    read: Box::new(move || again.clone().into_config()),
                };
                let config = cli.serve.into_config()?;
                let serving = cli::serve::serve(config, None, log, Some(reload));
                run_to_exit(runtime(workers)?, serving)
            })
        }
    }
}

/// Runs a serving command with the log installed. Under the JSON log, a
/// failure to start and a panic are log objects too (anyhow's `Error: …`
/// and the panic message would be the only plain lines); the exit status
/// stays non-zero.
fn logged(log: Log, run: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    agui_gateway::obs::logging::init(log);
    if log == Log::Text {
        return run();
    }
    std::panic::set_hook(Box::new(
        |info| tracing::error!(panic = %info, "the gateway panicked"),
    ));
    if let Err(err) = run() {
        tracing::error!(error = format!("{err:#}"), "the gateway stopped");
        std::process::exit(1);
    }
    Ok(())
}

/// Runs a serving command to its end, then leaves without waiting for
/// blocking work still running (an export to a slow collector, a name
/// lookup): dropping the runtime would wait for it, past the grace.
fn run_to_exit(
    runtime: tokio::runtime::Runtime,
    serving: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let served = runtime.block_on(serving);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    served
}

fn runtime(workers: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    builder
        .enable_all()
        .build()
        .context("gateway could not start its runtime")
}
