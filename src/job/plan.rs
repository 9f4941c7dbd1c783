//! The plan job: evaluate, rank, pick, build the plan file.
