//! The gateway's modules, as a library for the binary (`main.rs`), the
//! fuzz targets (`fuzz/`) and tests. Not a stable API: the binary and its
//! HTTP surface are the product.
#![forbid(unsafe_code)]

pub mod agui;
pub mod config;
pub mod http;
pub mod obs;
pub mod random;
pub mod relay;
pub mod resume;
pub mod signing;
pub mod state;
pub mod upstream;
