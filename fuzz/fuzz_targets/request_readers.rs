//! libFuzzer's entry for `checks/request_readers.rs`, which says what it holds; the
//! same check runs over the committed corpus as an ordinary test
//! (`crates/agui-gateway/tests/gateway/fuzz_corpora.rs`).
#![no_main]

#[path = "../checks/request_readers.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
