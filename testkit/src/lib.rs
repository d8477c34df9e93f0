//! What the tests of this workspace share: the outside services some of them need, and how a test
//! that needs one behaves when it is missing.
//!
//! `scripts/test.sh` starts every service (a real HDFS, the YARN stand-in, a KDC with a secure
//! HDFS and YARN) and finds the tools (a headless browser, Pythons with pyarrow/numpy and with
//! PySpark), exports where they are, and sets `PS_TEST_ALL=1`. A plain `cargo test` has none of
//! them: a test that needs one prints one line saying what it needs and how to get it, and returns
//! (it passes without having checked anything; the line says so). Under `PS_TEST_ALL` a missing
//! service fails the test instead, so CI can never skip silently.

use std::io::Write;

/// An outside service or tool a test needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// A real HDFS (`HDFS_URL`, `HADOOP_CONF_DIR`; scripts/hdfs-up.sh, which needs a JDK).
    Hdfs,
    /// The YARN stand-in on Hadoop's own server code (`PS_YARN_CONF`, `PS_YARN_DIR`).
    Yarn,
    /// An MIT KDC with a secure HDFS and YARN stand-in (`PS_SECURE_HDFS_CONF`, `PS_SECURE_YARN_CONF`).
    SecureHadoop,
    /// A headless browser (`PS_BROWSER`, or `chromium-headless-shell`/`chromium` on the PATH).
    Browser,
    /// A Python with pyarrow and numpy (`PS_PYTHON`, or `python3` when it has both).
    PyReaders,
    /// A Python with PySpark 3.5 (`PS_SPARK_PYTHON`; scripts/pyspark.sh makes one).
    PySpark,
}

impl Service {
    /// The environment variables scripts/test.sh sets for this service.
    pub fn vars(self) -> &'static [&'static str] {
        match self {
            Service::Hdfs => &["HDFS_URL"],
            Service::Yarn => &["PS_YARN_CONF", "PS_YARN_DIR", "HDFS_URL"],
            Service::SecureHadoop => &["PS_SECURE_HDFS_CONF", "PS_SECURE_YARN_CONF", "PS_KDC_DIR"],
            Service::Browser => &["PS_BROWSER"],
            Service::PyReaders => &["PS_PYTHON"],
            Service::PySpark => &["PS_SPARK_PYTHON"],
        }
    }

    /// What it is and how to get it, for the skip line.
    pub fn what(self) -> &'static str {
        match self {
            Service::Hdfs => "a real HDFS (scripts/hdfs-up.sh prints HDFS_URL; needs a JDK)",
            Service::Yarn => "the YARN stand-in and HDFS (scripts/yarn-up.sh after scripts/hdfs-up.sh; needs a JDK)",
            Service::SecureHadoop => {
                "a Kerberos KDC with a secure HDFS and YARN (scripts/kdc-up.sh, then the secure ups)"
            }
            Service::Browser => "a headless browser (Debian's chromium-headless-shell, or PS_BROWSER)",
            Service::PyReaders => "a Python with pyarrow and numpy (scripts/pyreaders.sh prints one)",
            Service::PySpark => "a Python with PySpark (scripts/pyspark.sh prints one)",
        }
    }

    /// Whether the service is there: its variables are set, or for the tools, one is found.
    pub fn available(self) -> bool {
        let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
        self.vars().iter().all(|v| set(v)) || self.found_without_vars()
    }

    fn found_without_vars(self) -> bool {
        let ok = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        match self {
            Service::Browser => {
                ["chromium-headless-shell", "chromium"].iter().any(|b| ok("sh", &["-c", &format!("command -v {b}")]))
            }
            Service::PyReaders => ok("python3", &["-c", "import pyarrow, numpy"]),
            _ => false,
        }
    }
}

/// Whether every one of `services` is there. When one is not: under `PS_TEST_ALL` (scripts/test.sh)
/// the test fails; otherwise one line goes to the terminal (past the test harness's capture) and
/// the caller returns.
///
/// ```no_run
/// use ps_testkit::{needs, Service};
/// if !needs(&[Service::Hdfs]) {
///     return;
/// }
/// ```
pub fn needs(services: &[Service]) -> bool {
    let missing: Vec<Service> = services.iter().copied().filter(|s| !s.available()).collect();
    if missing.is_empty() {
        return true;
    }
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let what: Vec<String> = missing.iter().map(|s| format!("{} [{}]", s.what(), s.vars().join(", "))).collect();
    if std::env::var_os("PS_TEST_ALL").is_some() {
        panic!("{test} needs {}, which PS_TEST_ALL requires", what.join("; "));
    }
    // Written to the process's stderr directly: the harness captures only `print!`/`eprint!`.
    let _ = writeln!(std::io::stderr(), "skipped: {test} needs {}; scripts/test.sh provides it", what.join("; "));
    false
}
