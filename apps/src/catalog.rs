//! The applications a runtime binary can run, by name, with the row types their tables use.
//! `ps-runtime` runs the built-in ones; a user's own binary adds its apps (and rows) and hands
//! the catalog to `ps_job::runtime_main`, so its apps get everything the built-in ones get:
//! `run` under `yarn-submit` (locally and on YARN), stats, checkpoints, logging, `--help`.

use ps_runtime::App;
use ps_runtime::Row;
use ps_runtime::RowTypeRegistry;
use ps_runtime::{PsError, Result};
use std::sync::Arc;

/// Builds an application from its command-line arguments (after its name). A `--help` among
/// them returns the app's help text as the error (clap's way), which `describe` prints.
pub type BuildApp = fn(&[String]) -> Result<Box<dyn App>>;

/// A builder with what it needs captured (a built-in's name).
type Builder = Arc<dyn Fn(&[String]) -> Result<Box<dyn App>> + Send + Sync>;

#[derive(Clone)]
struct Entry {
    name: String,
    about: String,
    build: Builder,
}

/// Applications by name, and the row types their tables use. No global state: each binary
/// builds one in its `main`.
#[derive(Clone)]
pub struct AppCatalog {
    apps: Vec<Entry>,
    rows: RowTypeRegistry,
}

impl AppCatalog {
    /// The built-in applications (`demo`, `mf`, `lda`, `pagerank`) and row types.
    pub fn builtin() -> Self {
        let apps = crate::BUILTIN
            .iter()
            .map(|&(name, about, build)| Entry {
                name: name.to_string(),
                about: about.to_string(),
                build: Arc::new(build),
            })
            .collect();
        AppCatalog { apps, rows: RowTypeRegistry::with_builtins() }
    }

    /// Adds application `name` (a one-line `about` for `yarn-submit --help`); an app of the same
    /// name is replaced.
    pub fn with_app(mut self, name: &str, about: &str, build: BuildApp) -> Self {
        self.apps.retain(|e| e.name != name);
        self.apps.push(Entry { name: name.into(), about: about.into(), build: Arc::new(build) });
        self
    }

    /// Adds a user-defined row type, for tables whose `row_type` is `R::TYPE_NAME`.
    pub fn with_row<R: Row>(mut self) -> Self {
        self.rows.register::<R>();
        self
    }

    /// The row types of this catalog's tables.
    pub fn rows(&self) -> &RowTypeRegistry {
        &self.rows
    }

    /// Names and one-line descriptions, in the order added.
    pub fn apps(&self) -> impl Iterator<Item = (&str, &str)> {
        self.apps.iter().map(|e| (e.name.as_str(), e.about.as_str()))
    }

    /// Application `name`'s `--help` text (`None` for an unknown app).
    pub fn help(&self, name: &str) -> Option<String> {
        crate::help_of(name, |n, a| self.build(n, a))
    }

    /// Builds application `name` from its arguments.
    pub fn build(&self, name: &str, args: &[String]) -> Result<Box<dyn App>> {
        match self.apps.iter().find(|e| e.name == name) {
            Some(e) => (e.build)(args),
            None => {
                let known: Vec<&str> = self.apps().map(|a| a.0).collect();
                Err(PsError::Config(format!("app: unknown application '{name}' (known: {})", known.join(", "))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_apps_join_the_builtin_ones_by_name() {
        let c = AppCatalog::builtin().with_app("twice-demo", "the demo again", |a| crate::build("demo", a));
        let names: Vec<&str> = c.apps().map(|a| a.0).collect();
        assert_eq!(names, ["demo", "mf", "lda", "pagerank", "twice-demo"]);
        assert_eq!(c.build("twice-demo", &["--clocks".into(), "3".into()]).unwrap().total_clocks(), Some(3));
        for name in ["demo", "mf", "lda", "pagerank"] {
            let help = c.help(name).unwrap();
            assert!(help.starts_with(&crate::help(name).unwrap()[..20]) && help.contains("Usage:"), "{name}: {help}");
        }
        assert!(c.help("twice-demo").unwrap().contains("--clocks"));
        assert_eq!(c.help("nope"), None);
        let e = c.build("nope", &[]).err().unwrap().to_string();
        assert!(e.contains("unknown application 'nope'") && e.contains("twice-demo"), "{e}");
    }
}
