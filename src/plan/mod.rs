pub mod corpus;
pub mod file;
pub mod model;
pub mod render;
