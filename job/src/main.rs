//! `ps-runtime`: one process of a parameter-server job with the built-in apps, started by
//! `yarn-submit` (locally or in a YARN container); also its data generators and snapshot tools.
//! A binary with apps of its own is the same one line with more apps in the catalog.

#[global_allocator]
static ALLOC: ps_runtime::HugePageAlloc = ps_runtime::HugePageAlloc;

fn main() {
    ps_job::runtime_main(ps_job::AppCatalog::builtin())
}
