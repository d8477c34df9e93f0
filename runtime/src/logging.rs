//! log4rs set-up shared by the binaries: plain lines on stderr (the launcher prefixes them with
//! the process id), level from `PS_LOG` (error, warn, info, debug, trace; default info).

use log::LevelFilter;
use log4rs::append::console::{ConsoleAppender, Target};
use log4rs::config::{Appender, Config, Root};
use log4rs::encode::pattern::PatternEncoder;

pub fn init(default: LevelFilter) {
    let level = std::env::var("PS_LOG").ok().and_then(|v| v.parse::<LevelFilter>().ok()).unwrap_or(default);
    let stderr = ConsoleAppender::builder()
        .target(Target::Stderr)
        .encoder(Box::new(PatternEncoder::new("{d(%H:%M:%S%.3f)} {h({l:5})} {m}{n}")))
        .build();
    let config = Config::builder()
        .appender(Appender::builder().build("stderr", Box::new(stderr)))
        .build(Root::builder().appender("stderr").build(level));
    if let Ok(config) = config {
        // A second init (tests running several processes in one binary) is harmless.
        let _ = log4rs::init_config(config);
    }
}
