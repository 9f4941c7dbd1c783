pub mod corpus;
pub mod file;
pub mod horizon;
pub mod model;
pub mod render;
pub mod report;
pub mod restore;
