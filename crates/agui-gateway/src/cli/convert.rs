//! `agui-gateway convert`: a recorded upstream body through the converter.

use std::io::{Read, Write};

use a2a_agui::{Options, OutputFormat, convert_recording};
use anyhow::{Context, bail};

pub fn convert(
    format: &str,
    thread_id: Option<String>,
    run_id: Option<String>,
    interrupts: bool,
    file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let Some(format) = OutputFormat::parse(format) else {
        bail!("unknown format {format:?}: expected agui or hector");
    };
    let input = read_input(file)?;
    let options = Options {
        thread_id,
        run_id,
        interrupts,
        ..Options::default()
    };
    let body =
        convert_recording(&input, options, format).context("gateway failed to encode an event")?;
    std::io::stdout().lock().write_all(&body)?;
    Ok(())
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
