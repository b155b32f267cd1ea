//! The fake agent for the load tools (`bench/`): paced chunks over
//! JSON-RPC on `--port` (0: any) and over gRPC on a second port.
//!
//! `fake-agent [--port 0] [--events 50] [--interval-ms 20] [--bytes 16]`;
//! prints `READY <port>`, then `GRPC <port>`, and serves until killed.
#![forbid(unsafe_code)]

use a2a_fake_agent::{Agent, Behaviour, LoadDefaults};
use anyhow::Context;
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Chunks per stream.
    #[arg(long, default_value_t = 50)]
    events: u64,
    /// Milliseconds between chunks.
    #[arg(long, default_value_t = 20)]
    interval_ms: u64,
    /// Filler bytes per chunk, besides the time marker.
    #[arg(long, default_value_t = 16)]
    bytes: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let defaults = LoadDefaults {
        events: args.events,
        interval_ms: args.interval_ms,
        bytes: args.bytes,
    };
    let agent = Agent::start(Behaviour::Load(defaults), args.port)
        .await
        .context("the fake agent cannot listen")?;
    println!("READY {}", agent.addr.port());
    if let Some(grpc) = agent.grpc {
        println!("GRPC {}", grpc.port());
    }
    std::future::pending::<()>().await;
    Ok(())
}
