//! `logreg-runtime`: the parameter-server runtime with one more application, `logreg`. Submit
//! it with `yarn-submit --runtime-bin target/release/logreg-runtime logreg --input ...`.

mod logreg;

// As in `ps-runtime`: large allocations (models, inputs) on huge pages where the kernel offers them.
#[global_allocator]
static ALLOC: ps_runtime::HugePageAlloc = ps_runtime::HugePageAlloc;

fn main() {
    ps_job::runtime_main(ps_job::AppCatalog::builtin().with_app(
        "logreg",
        "sparse logistic regression by SGD (LibSVM input)",
        ps_apps::driver::build::<logreg::LogReg>,
    ))
}
