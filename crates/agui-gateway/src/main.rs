//! `agui-gateway`: the binary edge. Parses the command line and hands off.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::path::PathBuf;

use a2a_agui::{Dialect, Options, convert_recording};
use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "agui-gateway",
    version,
    about = "Re-streams A2A agents as AG-UI events over SSE"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert a recorded upstream A2A body (SSE capture, JSON Lines or one
    /// JSON document) into the AG-UI SSE body the gateway would send.
    Convert {
        /// Output dialect: `agui` (official AG-UI) or `hector` (the seed's named events).
        #[arg(long, default_value = "agui")]
        dialect: String,
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
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Convert {
            dialect,
            thread_id,
            run_id,
            interrupts,
            file,
        } => {
            let Some(dialect) = Dialect::parse(&dialect) else {
                bail!("unknown dialect {dialect:?}: expected agui or hector");
            };
            let input = read_input(file.as_deref())?;
            let options = Options {
                thread_id,
                run_id,
                interrupts,
            };
            let body = convert_recording(&input, options, dialect)
                .context("gateway failed to encode an event")?;
            std::io::stdout().lock().write_all(&body)?;
            Ok(())
        }
    }
}

fn read_input(file: Option<&std::path::Path>) -> anyhow::Result<Vec<u8>> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
        }
        _ => {
            let mut input = Vec::new();
            std::io::stdin()
                .read_to_end(&mut input)
                .context("cannot read standard input")?;
            Ok(input)
        }
    }
}
