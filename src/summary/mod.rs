//! What a finished run says in words: the text summary of a copy or exec run ([`copy`]) and of a
//! sync run ([`sync`]: the one line a cron mail shows, its problems and notes, the lines of a dry
//! run). Beside [`crate::json`] (the same runs as documents) and [`crate::plan::render`] (a
//! plan's table): the command line chooses which to print and where, a program embedding
//! moverctl gets the same words.

pub mod copy;
pub mod drain;
pub mod ls;
pub mod plan;
pub mod providers;
pub mod stage;
pub mod status;
pub mod sync;
