#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ps_job::fuzzing::rendezvous_lines(data));
