#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ps_yarn::fuzzing::sasl_challenge(data));
