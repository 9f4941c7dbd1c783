//! A reader that goes away early (`moverctl ls … | head -1`) is not an error: the command ends
//! quietly with exit 0, as `cat`, `ls` and rclone do. Writes that fail with a broken pipe are
//! noted here; `println!` (which panics on one) is caught by a panic hook.

use std::sync::atomic::{AtomicBool, Ordering};

static BROKEN: AtomicBool = AtomicBool::new(false);

/// Note a failed write; true when it was a broken pipe.
pub fn note(e: &std::io::Error) -> bool {
    let broken = e.kind() == std::io::ErrorKind::BrokenPipe;
    if broken {
        BROKEN.store(true, Ordering::Relaxed);
    }
    broken
}

/// Whether stdout's reader has gone away during this run.
pub fn broken() -> bool {
    BROKEN.load(Ordering::Relaxed)
}

/// `println!` panics with "failed printing to stdout: Broken pipe": end quietly instead.
pub fn install_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}
